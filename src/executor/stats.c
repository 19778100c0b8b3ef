/* The executor's counters and the periodic stats log line. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "executor/stats.h"
#include "warren/log.h"
#include "warren/mq.h"

void stats_dead_letter(executor_stats_t *s, const char *reason, uint64_t n)
{
    for (size_t i = 0; i < s->n_reasons; i++)
        if (!strcmp(s->dead_letters[i].reason, reason)) {
            s->dead_letters[i].count += n;
            return;
        }
    if (s->n_reasons == STATS_MAX_REASONS) {
        s->dead_letters_other += n;
        return;
    }
    snprintf(s->dead_letters[s->n_reasons].reason, sizeof s->dead_letters[0].reason, "%s", reason);
    s->dead_letters[s->n_reasons++].count = n;
}

uint64_t stats_dead_letters(const executor_stats_t *s, const char *reason)
{
    for (size_t i = 0; i < s->n_reasons; i++)
        if (!strcmp(s->dead_letters[i].reason, reason))
            return s->dead_letters[i].count;
    return 0;
}

void stats_merge(executor_stats_t *dst, const executor_stats_t *src)
{
#define STATS_ADD(name) dst->name += src->name;
    EXECUTOR_COUNTERS(STATS_ADD)
#undef STATS_ADD
    if (src->dead_letter_age_s > dst->dead_letter_age_s)
        dst->dead_letter_age_s = src->dead_letter_age_s;
    for (size_t i = 0; i < sizeof dst->confirms / sizeof dst->confirms[0]; i++)
        dst->confirms[i] += src->confirms[i];
    metrics_hist_merge(&dst->dispatch_latency, &src->dispatch_latency);
    metrics_hist_merge(&dst->submit_to_start, &src->submit_to_start);
    metrics_hist_merge(&dst->start_to_end, &src->start_to_end);
    for (int f = 0; f < EXEC_STATUS_COUNT; f++)
        for (int t = 0; t < EXEC_STATUS_COUNT; t++)
            dst->happy[f][t] += src->happy[f][t];
    for (size_t i = 0; i < src->n_reasons; i++)
        stats_dead_letter(dst, src->dead_letters[i].reason, src->dead_letters[i].count);
    dst->dead_letters_other += src->dead_letters_other;
}

/* "expired=3,parse_error=1" */
static void reasons_text(const executor_stats_t *s, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n_reasons && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s=%" PRIu64, i ? "," : "",
                              s->dead_letters[i].reason, s->dead_letters[i].count);
    if (s->dead_letters_other && o < len)
        snprintf(buf + o, len - o, "%sother=%" PRIu64, o ? "," : "", s->dead_letters_other);
}

void stats_log(const executor_stats_t *s, breaker_state_t breaker, uint64_t db_errors)
{
    struct {
#define STATS_TEXT_FIELD(name) char name[24];
        EXECUTOR_COUNTERS(STATS_TEXT_FIELD)
#undef STATS_TEXT_FIELD
    } t;
    char db_t[24], age_t[24], reasons[512];
#define STATS_TEXT(name) snprintf(t.name, sizeof t.name, "%" PRIu64, s->name);
    EXECUTOR_COUNTERS(STATS_TEXT)
#undef STATS_TEXT
    snprintf(db_t, sizeof db_t, "%" PRIu64, db_errors);
    snprintf(age_t, sizeof age_t, "%" PRIu64, s->dead_letter_age_s);
    reasons_text(s, reasons, sizeof reasons);
#define STATS_KV(name) #name, t.name,
    log_kv(LOG_INFO, "stats", EXECUTOR_COUNTERS(STATS_KV) "dead_letters", reasons,
           "dead_letter_age_s", age_t, "db_errors", db_t, "breaker", breaker_state_name(breaker),
           NULL);
#undef STATS_KV
}

void stats_confirm(executor_stats_t *s, int status)
{
    switch (status) {
    case MQ_OK: s->confirms[STATS_CONFIRM_ACKED]++; break;
    case MQ_ERR_NACKED: s->confirms[STATS_CONFIRM_NACKED]++; break;
    case MQ_ERR_RETURNED: s->confirms[STATS_CONFIRM_RETURNED]++; break;
    case MQ_ERR_TIMEOUT: s->confirms[STATS_CONFIRM_TIMEOUT]++; break;
    default: s->confirms[STATS_CONFIRM_FAILED]++; break;
    }
}

void stats_init(executor_stats_t *s)
{
    metrics_hist_init(&s->dispatch_latency, metrics_fast_bounds, metrics_fast_bounds_len);
    metrics_hist_init(&s->submit_to_start, metrics_seconds_bounds, metrics_seconds_bounds_len);
    metrics_hist_init(&s->start_to_end, metrics_seconds_bounds, metrics_seconds_bounds_len);
}

/* warren_dead_letters_total{reason}: the reasons are machine words (bounded by the table). */
static void collect_dead_letters(metrics_out_t *o, void *arg)
{
    const executor_stats_t *s = arg;
    metrics_family(o, "warren_dead_letters_total", "counter",
                   "Rows written to dead_letters, by reason");
    char labels[128];
    for (size_t i = 0; i < s->n_reasons; i++) {
        labels[0] = '\0';
        (void)metrics_label(labels, sizeof labels, "reason", s->dead_letters[i].reason);
        metrics_sample_u64(o, "warren_dead_letters_total", labels, s->dead_letters[i].count);
    }
    metrics_sample_u64(o, "warren_dead_letters_total", "reason=\"other\"", s->dead_letters_other);
}

int stats_register(executor_stats_t *s, metrics_registry_t *r)
{
    static const char *const outcomes[] = {"acked", "nacked", "returned", "timeout", "failed"};
    const struct {
        const char *name, *labels, *help;
        const uint64_t *v;
    } counters[] = {
        {"warren_scheduler_ticks_total", "", "Scheduler ticks", &s->sched_ticks},
        {"warren_dispatches_total", "result=\"confirmed\"",
         "Dispatches by result: confirmed by the broker, refused (moved back to requested), no "
         "answer (left scheduled)",
         &s->dispatched},
        {"warren_dispatches_total", "result=\"unconfirmed\"", NULL, &s->dispatch_failed},
        {"warren_dispatches_total", "result=\"unknown\"", NULL, &s->dispatch_unknown},
        {"warren_dispatch_reverts_total", "",
         "Unconfirmed dispatches moved back to requested by the compare-and-swap",
         &s->dispatch_reverted},
        {"warren_results_total", "applied=\"true\"",
         "Worker status reports and completions, applied or changing nothing (stale)",
         &s->results_applied},
        {"warren_results_total", "applied=\"false\"", NULL, &s->results_stale},
        {"warren_results_unprocessable_total", "",
         "Completions that could not be applied: their attempt failed", &s->results_unprocessable},
        {"warren_results_after_cancel_total", "",
         "Worker reports that arrived after a cancel and were kept in the history only",
         &s->results_after_cancel},
        {"warren_heartbeats_total", "", "Worker heartbeats applied", &s->heartbeats},
        {"warren_monitor_transitions_total", "to=\"failed\",reason=\"scheduled_timeout\"",
         "Executions the timeout monitor moved, by status reached and reason (a canceling one "
         "whose worker is gone or silent becomes cancelled, counted as abandoned)",
         &s->monitor_failed},
        {"warren_monitor_transitions_total", "to=\"abandoned\",reason=\"worker_stale\"", NULL,
         &s->monitor_abandoned},
        {"warren_monitor_transitions_total", "to=\"abandoned\",reason=\"worker_restarted\"", NULL,
         &s->abandoned_restarted},
        {"warren_monitor_transitions_total", "to=\"abandoned\",reason=\"running_timeout\"", NULL,
         &s->abandoned_timeout},
        {"warren_monitor_transitions_total", "to=\"requested\",reason=\"unconfirmed\"", NULL,
         &s->monitor_redispatched},
        {"warren_dead_letter_executions_failed_total", "",
         "Executions failed because their dispatch was dead-lettered", &s->dlq_failed_executions},
        {"warren_dead_letter_duplicates_total", "",
         "Redelivered dead letters whose row already existed", &s->dead_letter_duplicates},
        {"warren_poison_stored_total", "",
         "Unreadable messages (results, heartbeats, dead letters) stored as dead_letters rows",
         &s->poison_stored},
        {"warren_dead_letters_folded_total", "",
         "Unusable messages folded into an open record of the same queue and reason (its "
         "occurrences) instead of a record of their own",
         &s->dead_letters_folded},
        {"warren_batches_retried_total", "", "Consumer batches kept unacked after a database error",
         &s->batches_retried},
        {"warren_acks_failed_total", "", "Acks after commit that did not reach the broker",
         &s->acks_failed},
        {"warren_cancels_total", "",
         "Cancels applied through the API (the CLI on the database URL is not counted here)",
         &s->cancels_requested},
        {"warren_dead_letters_redriven_total", "",
         "Dead letters redriven through the API (a new attempt of their execution)",
         &s->dead_letters_redriven},
        {"warren_staleness_warnings_total", "",
         "Executions past staleness.warning_pct of their staleness threshold (once per status "
         "and attempt)",
         &s->staleness_warnings},
        {"warren_staleness_timeouts_total", "",
         "Executions ended by the staleness detector (failed, or abandoned when running)",
         &s->staleness_timeouts},
        {"warren_queue_timeouts_total", "",
         "Executions failed because no worker started them within their queue_timeout_s "
         "(still requested, or their dispatch expired in a worker queue)",
         &s->queue_timeouts},
        {"warren_dead_letter_events_total", "result=\"published\"",
         "ExecutionDeadLettered events: published (confirmed), or failed (the record stays "
         "unemitted and is published again)",
         &s->events_published},
        {"warren_dead_letter_events_total", "result=\"failed\"", NULL, &s->events_failed},
        {"warren_execution_ended_events_total", "result=\"published\"",
         "ExecutionEnded events: published (confirmed), failed (the row stays in the outbox and is "
         "published again), or dropped unannounced (events.enabled off)",
         &s->ended_events_published},
        {"warren_execution_ended_events_total", "result=\"failed\"", NULL, &s->ended_events_failed},
        {"warren_execution_ended_events_total", "result=\"dropped\"", NULL,
         &s->ended_events_dropped},
        {"warren_retention_pruned_total", "table=\"dead_letters\"",
         "Rows pruned by retention (dead_letters.retention_days, executions.retention_days, "
         "execution_history.retention_days; idempotency keys once expired)",
         &s->pruned_dead_letters},
        {"warren_retention_pruned_total", "table=\"executions\"", NULL, &s->pruned_executions},
        {"warren_retention_pruned_total", "table=\"execution_events\"", NULL, &s->pruned_history},
        {"warren_retention_pruned_total", "table=\"execution_idempotency_keys\"", NULL,
         &s->pruned_idem_keys},
        {"warren_cancel_messages_total", "result=\"confirmed\"",
         "Cancel control messages to workers, confirmed or not", &s->cancel_messages},
        {"warren_cancel_messages_total", "result=\"unconfirmed\"", NULL,
         &s->cancel_messages_failed},
        {"warren_retries_total", "decision=\"retry\"",
         "Ended attempts the retry policy decided on: retried (back to requested, due later) or "
         "exhausted (max_retries_exceeded)",
         &s->retries_scheduled},
        {"warren_retries_total", "decision=\"exhausted\"", NULL, &s->retries_exhausted},
        {"warren_confirm_wait_results_total", "",
         "Times results were read and applied while a dispatch batch waited for its confirms",
         &s->confirm_wait_results},
    };
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        const char *help = counters[i].help ? counters[i].help : counters[i - 1].help;
        if (metrics_add_u64(r, METRIC_COUNTER, counters[i].name, help, counters[i].labels,
                            counters[i].v) != 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++) {
        char labels[64] = "";
        (void)metrics_label(labels, sizeof labels, "outcome", outcomes[i]);
        if (metrics_add_u64(r, METRIC_COUNTER, "warren_dispatch_confirms_total",
                            "Dispatch publishes by how the broker answered: acked, nacked, "
                            "returned (unroutable), timeout, failed (connection, breaker)",
                            labels, &s->confirms[i]) != 0)
            return -1;
    }
    if (metrics_add_hist(r, "warren_dispatch_publish_seconds",
                         "Time of one dispatch publish batch, from the first write to the last "
                         "confirm",
                         "", &s->dispatch_latency) != 0 ||
        metrics_add_hist(r, "warren_execution_start_delay_seconds",
                         "Time from submission to the worker's running report", "",
                         &s->submit_to_start) != 0 ||
        metrics_add_hist(r, "warren_execution_run_seconds",
                         "Time from the start to the end of an execution, as recorded", "",
                         &s->start_to_end) != 0)
        return -1;
    return metrics_add_collector(r, collect_dead_letters, s);
}
