/*
 * The executor's counters, in one place: every module bumps them here, and the periodic stats
 * log line and /metrics read them here.
 */
#ifndef WARREN_EXECUTOR_STATS_H
#define WARREN_EXECUTOR_STATS_H

#include "warren/breaker.h"
#include "warren/common.h"
#include "warren/exec_status.h"
#include "warren/metrics.h"

#define STATS_MAX_REASONS 24

/* X(name): every counter, in the order of the stats log line. Adding a counter is one line
 * here: the struct, stats_merge() and stats_log() are built from this list; its name in
 * /metrics is one line of stats_register(). */
#define EXECUTOR_COUNTERS(X)                                                                       \
    X(sched_ticks)            /* scheduler rounds run */                                           \
    X(dispatched)             /* dispatches confirmed by the broker */                             \
    X(dispatch_failed)        /* publishes refused or never sent (moved back to requested) */      \
    X(dispatch_unknown)       /* publishes written without an answer (left scheduled) */           \
    X(dispatch_reverted)      /* rows actually moved back by the CAS */                            \
    X(results_applied)        /* status changes written from worker messages */                    \
    X(results_stale)          /* worker messages that changed nothing (attempt/status fence) */    \
    X(results_unprocessable)  /* completions that could not be applied: attempt failed */          \
    X(heartbeats)             /* heartbeats applied */                                             \
    X(monitor_failed)         /* scheduled too long -> failed */                                   \
    X(monitor_redispatched)   /* dispatch never confirmed -> requested */                          \
    X(monitor_abandoned)      /* running on a stale worker -> abandoned */                         \
    X(abandoned_restarted)    /* reported running by an older process of its worker */             \
    X(abandoned_timeout)      /* running past its timeout + grace, no result */                    \
    X(dlq_failed_executions)  /* executions failed because their dispatch dead-lettered */         \
    X(dead_letter_duplicates) /* redeliveries whose row already existed */                         \
    X(batches_retried)        /* batches kept unacked after a database error */                    \
    X(acks_failed)            /* acks after commit that did not reach the broker */                \
    X(poison_stored)          /* unreadable messages kept as dead_letters rows */                  \
    X(dead_letters_folded)    /* messages folded into an open record of the same shape */          \
    X(results_after_cancel)   /* reports that arrived after a cancel, kept in the history */       \
    X(cancels_requested)      /* cancels applied (requested/scheduled/running) */                  \
    X(dead_letters_redriven)  /* dead letters redriven (a new attempt of their execution) */       \
    X(staleness_warnings)     /* executions past staleness.warning_pct of their threshold */       \
    X(staleness_timeouts)     /* executions ended by the staleness detector */                     \
    X(queue_timeouts)         /* executions failed past their queue_timeout_s (both paths) */      \
    X(events_published)       /* ExecutionDeadLettered events confirmed by the broker */           \
    X(events_failed)          /* event publishes that failed (the record stays unemitted) */       \
    X(ended_events_published) /* ExecutionEnded events confirmed by the broker */                  \
    X(ended_events_failed)    /* their publishes that failed (the row stays in the outbox) */      \
    X(ended_events_dropped)   /* outbox rows deleted unannounced: events.enabled off */            \
    X(pruned_dead_letters)    /* closed dead-letter records pruned by retention */                 \
    X(pruned_executions)      /* terminal executions pruned by retention */                        \
    X(pruned_history)         /* history rows pruned by retention */                               \
    X(pruned_idem_keys)       /* expired idempotency keys pruned by retention */                   \
    X(cancel_messages)        /* control messages confirmed to a worker */                         \
    X(cancel_messages_failed) /* control messages not confirmed (returned, nacked, ...) */         \
    X(retries_scheduled)      /* ended attempts the retry policy sent back to requested */         \
    X(retries_exhausted)      /* ended attempts whose policy was used up (max_retries_exceeded) */ \
    X(confirm_wait_results)   /* results batches applied while a dispatch batch waited */

typedef struct executor_stats {
#define STATS_FIELD(name) uint64_t name;
    EXECUTOR_COUNTERS(STATS_FIELD)
#undef STATS_FIELD
    uint64_t dead_letter_age_s; /* the longest a dead letter waited unconsumed: recorded since the
                                 * last stats line, or held unacked now (a maximum, not a sum) */
    uint64_t confirms[5];       /* dispatch publishes by outcome: STATS_CONFIRM_* */
    metrics_hist_t dispatch_latency; /* seconds of one publish batch, write to last confirm */
    metrics_hist_t submit_to_start;  /* seconds from created_at to started_at */
    metrics_hist_t start_to_end;     /* seconds from started_at to ended_at */
    /* The happy path's steps this executor made ([from][to]: requested -> scheduled, scheduled
     * -> running, scheduled or running -> completed), which the history does not store (schema
     * 029); warren_execution_transitions_total adds them to what it counts there. */
    uint64_t happy[EXEC_STATUS_COUNT][EXEC_STATUS_COUNT];
    struct {
        char reason[64];
        uint64_t count;
    } dead_letters[STATS_MAX_REASONS]; /* rows written to dead_letters, by reason */
    size_t n_reasons;
    uint64_t dead_letters_other; /* reasons beyond the table */
} executor_stats_t;

/* How a dispatch publish ended, for warren_dispatch_confirms_total{outcome}. */
enum {
    STATS_CONFIRM_ACKED = 0,
    STATS_CONFIRM_NACKED,
    STATS_CONFIRM_RETURNED,
    STATS_CONFIRM_TIMEOUT,
    STATS_CONFIRM_FAILED
};
/* Count one publish that ended with status (mq_status_t). */
void stats_confirm(executor_stats_t *s, int status);

/* Set up the histograms of a stats struct that /metrics serves. */
void stats_init(executor_stats_t *s);
/* Name every counter and histogram of s in the registry (s must outlive it), plus a collector
 * for the dead letters by reason. -1 when out of memory. */
int stats_register(executor_stats_t *s, metrics_registry_t *r) WARN_UNUSED;

void stats_dead_letter(executor_stats_t *s, const char *reason, uint64_t n);
uint64_t stats_dead_letters(const executor_stats_t *s, const char *reason);
/* Add every counter of src to dst (a transaction's counts, once it committed). */
void stats_merge(executor_stats_t *dst, const executor_stats_t *src);
/* One log line with every counter, the dead letters by reason, the database error count and the
 * breaker state. */
void stats_log(const executor_stats_t *s, breaker_state_t breaker, uint64_t db_errors);

#endif
