/*
 * The end of an attempt, wherever it ends (results, the dead-letter handler, the monitor): its
 * execution_attempts row, the retry decision (warren/retry.h) and what follows from it, in two
 * statements for a whole batch inside the caller's transaction:
 *   1. record every attempt that ended and read what the decision needs (the action, the
 *      submission's overrides, the retries so far);
 *   2. retried rows go back to requested, due after the delay; exhausted ones get a
 *      max_retries_exceeded dead letter holding all their attempts; a worker that lost a
 *      dispatch is marked suspect (no new work until it heartbeats again).
 * The statements that ended the attempts set the final status as before; a retry moves the row
 * on in the same transaction, so nobody sees it failed.
 */
#ifndef WARREN_EXECUTOR_ATTEMPTS_H
#define WARREN_EXECUTOR_ATTEMPTS_H

#include <libpq-fe.h>
#include "executor/stats.h"
#include "warren/config.h"
#include "warren/retry.h"

typedef struct attempt_end {
    int64_t id;
    int attempt;
    const char *status; /* the status the ending statement set: completed, failed, ... */
    attempt_outcome_t outcome;
    const char *error; /* NULL: the row's error */
    int exit_code;     /* with has_exit_code */
    bool has_exit_code;
    const char *x_death;     /* JSON text (the broker's x-death of every hop) or NULL */
    const char *lost_worker; /* a worker whose queue lost the dispatch: marked suspect */
    bool force_retry;        /* retried at once whatever the policy (a retired worker's queue) */
} attempt_end_t;

/* The configuration the decisions read (the executor's, reloaded in place on SIGHUP). */
void attempts_set_config(const warren_config_t *cfg);
/* Random numbers for jitter (tests may replace it): uniform in [0, 1). */
double attempts_random(void *ctx);

/* Record and decide n ended attempts (those whose row is still on that attempt and status).
 * Counts retries_scheduled, retries_exhausted and the dead letters into counts. */
int attempts_end(PGconn *db, const attempt_end_t *ends, size_t n, executor_stats_t *counts,
                 char *err, size_t errlen) WARN_UNUSED;

/* The outcome of a completion reported with status and exit code (75: tempfail). */
attempt_outcome_t attempts_outcome_of(const char *status, bool has_exit_code, int exit_code);

#endif
