/*
 * The executor's counters, in one place: every module bumps them here, and the periodic stats
 * log line (and later /metrics) reads them here.
 */
#ifndef WARREN_EXECUTOR_STATS_H
#define WARREN_EXECUTOR_STATS_H

#include "warren/breaker.h"
#include "warren/common.h"

#define STATS_MAX_REASONS 24

typedef struct executor_stats {
    uint64_t sched_ticks;
    uint64_t dispatched;        /* dispatches confirmed by the broker */
    uint64_t dispatch_failed;   /* publishes refused or never sent (moved back to requested) */
    uint64_t dispatch_unknown;  /* publishes written without an answer (left scheduled) */
    uint64_t dispatch_reverted; /* rows actually moved back by the CAS */
    uint64_t results_applied;   /* status changes written from worker messages */
    uint64_t results_stale;     /* worker messages that changed nothing (attempt/status fence) */
    uint64_t results_unprocessable;  /* completions that could not be applied: attempt failed */
    uint64_t heartbeats;             /* heartbeats applied */
    uint64_t monitor_failed;         /* scheduled too long -> failed */
    uint64_t monitor_redispatched;   /* dispatch never confirmed -> requested */
    uint64_t monitor_abandoned;      /* running on a stale worker -> abandoned */
    uint64_t abandoned_restarted;    /* reported running by an older process of its worker */
    uint64_t abandoned_timeout;      /* running past its timeout + grace, no result */
    uint64_t dlq_failed_executions;  /* executions failed because their dispatch dead-lettered */
    uint64_t dead_letter_duplicates; /* redeliveries whose row already existed */
    uint64_t batches_retried;        /* batches kept unacked after a database error */
    uint64_t acks_failed;            /* acks after commit that did not reach the broker */
    uint64_t dead_letter_age_s;      /* the longest a dead letter waited unconsumed: recorded since
                                 * the last stats line, or held unacked now (a maximum) */
    struct {
        char reason[64];
        uint64_t count;
    } dead_letters[STATS_MAX_REASONS]; /* rows written to dead_letters, by reason */
    size_t n_reasons;
    uint64_t dead_letters_other; /* reasons beyond the table */
} executor_stats_t;

void stats_dead_letter(executor_stats_t *s, const char *reason, uint64_t n);
uint64_t stats_dead_letters(const executor_stats_t *s, const char *reason);
/* Add every counter of src to dst (a transaction's counts, once it committed). */
void stats_merge(executor_stats_t *dst, const executor_stats_t *src);
/* One log line with every counter, the breaker state and database error count. */
void stats_log(const executor_stats_t *s, breaker_state_t breaker, uint64_t db_errors);

#endif
