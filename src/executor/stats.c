/* The executor's counters and the periodic stats log line. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "executor/stats.h"
#include "warren/log.h"

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
    dst->dispatch_unknown += src->dispatch_unknown;
    dst->dispatch_reverted += src->dispatch_reverted;
    dst->results_applied += src->results_applied;
    dst->results_stale += src->results_stale;
    dst->results_unprocessable += src->results_unprocessable;
    dst->heartbeats += src->heartbeats;
    dst->monitor_failed += src->monitor_failed;
    dst->monitor_redispatched += src->monitor_redispatched;
    dst->monitor_abandoned += src->monitor_abandoned;
    dst->abandoned_restarted += src->abandoned_restarted;
    dst->abandoned_timeout += src->abandoned_timeout;
    dst->dlq_failed_executions += src->dlq_failed_executions;
    dst->dead_letter_duplicates += src->dead_letter_duplicates;
    dst->batches_retried += src->batches_retried;
    dst->acks_failed += src->acks_failed;
    if (src->dead_letter_age_s > dst->dead_letter_age_s)
        dst->dead_letter_age_s = src->dead_letter_age_s;
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
    NUM(dispatch_unknown);
    NUM(dispatch_reverted);
    NUM(results_applied);
    NUM(results_stale);
    NUM(results_unprocessable);
    NUM(heartbeats);
    NUM(monitor_failed);
    NUM(monitor_redispatched);
    NUM(monitor_abandoned);
    NUM(abandoned_restarted);
    NUM(abandoned_timeout);
    NUM(dlq_failed_executions);
    NUM(dead_letter_duplicates);
    NUM(batches_retried);
    NUM(dead_letter_age_s);
    char db_t[24], reasons[512];
    snprintf(db_t, sizeof db_t, "%" PRIu64, db_errors);
    reasons_text(s, reasons, sizeof reasons);
    log_kv(LOG_INFO, "stats", "dispatched", dispatched_t, "dispatch_failed", dispatch_failed_t,
           "dispatch_unknown", dispatch_unknown_t, "dispatch_reverted", dispatch_reverted_t,
           "results_applied", results_applied_t, "results_stale", results_stale_t,
           "results_unprocessable", results_unprocessable_t, "heartbeats", heartbeats_t,
           "monitor_failed", monitor_failed_t, "monitor_redispatched", monitor_redispatched_t,
           "monitor_abandoned", monitor_abandoned_t, "abandoned_restarted", abandoned_restarted_t,
           "abandoned_timeout", abandoned_timeout_t, "dlq_failed_executions",
           dlq_failed_executions_t, "dead_letters", reasons, "dead_letter_duplicates",
           dead_letter_duplicates_t, "dead_letter_age_s", dead_letter_age_s_t, "batches_retried",
           batches_retried_t, "db_errors", db_t, "breaker", breaker_state_name(breaker), NULL);
}
