/*
 * The executor's counters, in one place: every module bumps them here, and the periodic stats
 * log line (and later /metrics) reads them here.
 */
#ifndef WARREN_EXECUTOR_STATS_H
#define WARREN_EXECUTOR_STATS_H

#include "warren/breaker.h"
#include "warren/common.h"
#include "warren/metrics.h"

#define STATS_MAX_REASONS 24

typedef struct executor_stats {
    uint64_t sched_ticks;
    uint64_t dispatched;        /* dispatches confirmed by the broker */
    uint64_t dispatch_failed;   /* publishes not confirmed (moved back to requested) */
    uint64_t dispatch_reverted; /* rows actually moved back by the CAS */
    uint64_t results_applied;   /* status changes written from worker messages */
    uint64_t results_stale;     /* worker messages that changed nothing (attempt/status fence) */
    uint64_t heartbeats;        /* heartbeats applied */
    uint64_t monitor_failed;    /* scheduled too long -> failed */
    uint64_t monitor_abandoned; /* running on a stale worker -> abandoned */
    uint64_t dlq_failed_executions;  /* executions failed because their dispatch dead-lettered */
    uint64_t dead_letter_duplicates; /* redeliveries whose row already existed */
    uint64_t batches_retried;        /* batches kept unacked after a database error */
    uint64_t acks_failed;            /* acks after commit that did not reach the broker */
    uint64_t poison_stored;          /* unreadable messages kept as dead_letters rows */
    uint64_t results_after_cancel;   /* reports that arrived after a cancel, kept in history */
    uint64_t cancels_requested;      /* cancels applied (requested/scheduled/running) */
    uint64_t cancel_messages;        /* control messages confirmed to a worker */
    uint64_t cancel_messages_failed; /* control messages not confirmed (returned, nacked, ...) */
    uint64_t confirms[5];            /* dispatch publishes by outcome: STATS_CONFIRM_* */
    metrics_hist_t dispatch_latency; /* seconds of one publish batch, write to last confirm */
    metrics_hist_t submit_to_start;  /* seconds from created_at to started_at */
    metrics_hist_t start_to_end;     /* seconds from started_at to ended_at */
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
/* One log line with every counter, the breaker state and database error count. */
void stats_log(const executor_stats_t *s, breaker_state_t breaker, uint64_t db_errors);

#endif
