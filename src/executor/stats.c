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
    dst->sched_ticks += src->sched_ticks;
    dst->dispatched += src->dispatched;
    dst->dispatch_failed += src->dispatch_failed;
    dst->dispatch_reverted += src->dispatch_reverted;
    dst->results_applied += src->results_applied;
    dst->results_stale += src->results_stale;
    dst->heartbeats += src->heartbeats;
    dst->monitor_failed += src->monitor_failed;
    dst->monitor_abandoned += src->monitor_abandoned;
    dst->dlq_failed_executions += src->dlq_failed_executions;
    dst->dead_letter_duplicates += src->dead_letter_duplicates;
    dst->batches_retried += src->batches_retried;
    dst->acks_failed += src->acks_failed;
    dst->poison_stored += src->poison_stored;
    dst->results_after_cancel += src->results_after_cancel;
    dst->cancels_requested += src->cancels_requested;
    dst->cancel_messages += src->cancel_messages;
    dst->cancel_messages_failed += src->cancel_messages_failed;
    for (size_t i = 0; i < sizeof dst->confirms / sizeof dst->confirms[0]; i++)
        dst->confirms[i] += src->confirms[i];
    metrics_hist_merge(&dst->dispatch_latency, &src->dispatch_latency);
    metrics_hist_merge(&dst->submit_to_start, &src->submit_to_start);
    metrics_hist_merge(&dst->start_to_end, &src->start_to_end);
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

#define NUM(field)                                                                                 \
    char field##_t[24];                                                                            \
    snprintf(field##_t, sizeof field##_t, "%" PRIu64, s->field)

void stats_log(const executor_stats_t *s, breaker_state_t breaker, uint64_t db_errors)
{
    NUM(dispatched);
    NUM(dispatch_failed);
    NUM(dispatch_reverted);
    NUM(results_applied);
    NUM(results_stale);
    NUM(heartbeats);
    NUM(monitor_failed);
    NUM(monitor_abandoned);
    NUM(dlq_failed_executions);
    NUM(dead_letter_duplicates);
    NUM(batches_retried);
    char db_t[24], reasons[512];
    snprintf(db_t, sizeof db_t, "%" PRIu64, db_errors);
    reasons_text(s, reasons, sizeof reasons);
    log_kv(LOG_INFO, "stats", "dispatched", dispatched_t, "dispatch_failed", dispatch_failed_t,
           "dispatch_reverted", dispatch_reverted_t, "results_applied", results_applied_t,
           "results_stale", results_stale_t, "heartbeats", heartbeats_t, "monitor_failed",
           monitor_failed_t, "monitor_abandoned", monitor_abandoned_t, "dlq_failed_executions",
           dlq_failed_executions_t, "dead_letters", reasons, "dead_letter_duplicates",
           dead_letter_duplicates_t, "batches_retried", batches_retried_t, "db_errors", db_t,
           "breaker", breaker_state_name(breaker), NULL);
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
         "Dispatches by result: confirmed by the broker, or not (moved back to requested)",
         &s->dispatched},
        {"warren_dispatches_total", "result=\"unconfirmed\"", NULL, &s->dispatch_failed},
        {"warren_dispatch_reverts_total", "",
         "Unconfirmed dispatches moved back to requested by the compare-and-swap",
         &s->dispatch_reverted},
        {"warren_results_total", "applied=\"true\"",
         "Worker status reports and completions, applied or changing nothing (stale)",
         &s->results_applied},
        {"warren_results_total", "applied=\"false\"", NULL, &s->results_stale},
        {"warren_results_after_cancel_total", "",
         "Worker reports that arrived after a cancel and were kept in the history only",
         &s->results_after_cancel},
        {"warren_heartbeats_total", "", "Worker heartbeats applied", &s->heartbeats},
        {"warren_monitor_transitions_total", "to=\"failed\"",
         "Executions the timeout monitor ended: scheduled too long (failed), worker gone "
         "(abandoned)",
         &s->monitor_failed},
        {"warren_monitor_transitions_total", "to=\"abandoned\"", NULL, &s->monitor_abandoned},
        {"warren_dead_letter_executions_failed_total", "",
         "Executions failed because their dispatch was dead-lettered", &s->dlq_failed_executions},
        {"warren_dead_letter_duplicates_total", "",
         "Redelivered dead letters whose row already existed", &s->dead_letter_duplicates},
        {"warren_poison_stored_total", "",
         "Unreadable messages (results, heartbeats, dead letters) stored as dead_letters rows",
         &s->poison_stored},
        {"warren_batches_retried_total", "", "Consumer batches kept unacked after a database error",
         &s->batches_retried},
        {"warren_acks_failed_total", "", "Acks after commit that did not reach the broker",
         &s->acks_failed},
        {"warren_cancels_total", "",
         "Cancels applied through the API (the CLI on the database URL is not counted here)",
         &s->cancels_requested},
        {"warren_cancel_messages_total", "result=\"confirmed\"",
         "Cancel control messages to workers, confirmed or not", &s->cancel_messages},
        {"warren_cancel_messages_total", "result=\"unconfirmed\"", NULL,
         &s->cancel_messages_failed},
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
