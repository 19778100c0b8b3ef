/*
 * The scheduler: each tick claims requested executions, assigns workers, commits them as
 * scheduled and publishes the dispatches with confirms; what the broker did not confirm is
 * moved back to requested. Its state is its own; the executor lends it the database
 * connection, the publishing client, the configuration and the counters.
 */
#ifndef WARREN_EXECUTOR_SCHEDULER_H
#define WARREN_EXECUTOR_SCHEDULER_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/breaker.h"
#include "warren/config.h"
#include "warren/mq.h"

/* Worker ids whose queue this executor declared (pinned dispatches), so it does so once. */
typedef struct declared_set {
    char **ids;
    size_t n, cap;
} declared_set_t;

/* The wait reason of a row whose dispatch went back to requested; warren_wait_reason (schema
 * 005) shows it as stored. */
#define SCHED_UNCONFIRMED_REASON                                                                   \
    "last dispatch was not confirmed by the broker; it will be dispatched again"

/* A confirm is recorded (dispatch_confirmed_at) this long after it came, and only on a row
 * still scheduled: by then the worker's report has usually moved the row on, and the confirm
 * costs no row version (docs/executor.md). Well below executor.unconfirmed_timeout_ms. */
#define SCHED_CONFIRM_DEFER_MS 500

/* How one publish ended, to be recorded: confirmed, or back to requested. */
typedef struct sched_settle {
    int64_t id;
    int attempt;
    bool confirmed;
    int64_t at_ms; /* monotonic, when the broker answered */
} sched_settle_t;

typedef struct sched {
    const warren_config_t *cfg; /* borrowed: executor.*, the exchange, worker topology */
    dbconn_t *db;               /* borrowed: the dispatch lane (claims) */
    /* borrowed: the lane of the results, where the settle runs too. Both update the rows of
     * dispatched executions, in orders of their own: on two connections at once they deadlock
     * (40P01, each a deadlock_timeout of 1 s; seen in bench/run), in turn they cannot. */
    dbconn_t *settle_db;
    mq_client_t *pub;        /* borrowed: publishes dispatches */
    mq_client_t *admin;      /* borrowed: declares pinned workers' queues (never publishes) */
    executor_stats_t *stats; /* borrowed */
    declared_set_t declared;
    breaker_state_t breaker_state; /* last publish breaker state logged (open/closed) */
    sched_settle_t *settle;        /* publish outcomes not recorded yet */
    size_t n_settle, cap_settle;
    size_t n_revert;              /* of which going back to requested */
    bool fault_exit_after_commit; /* WARREN_FAULT=exit_after_commit (tests only) */
    bool publishing;              /* a batch waits for its confirms (results go on meanwhile) */
} sched_t;

/* Borrows everything it is given (no I/O). Free with sched_free(). */
void sched_init(sched_t *s, const warren_config_t *cfg, dbconn_t *db, dbconn_t *settle_db,
                mq_client_t *pub, mq_client_t *admin, executor_stats_t *stats);
void sched_free(sched_t *s);
/* Claim, assign, commit, publish; on a fiber, the database and confirm waits let the loop run.
 * Returns 1 when it should run again at once (a full batch
 * went out), 0 when it should wait executor.poll_interval_ms, -1 when it did not run
 * (breaker open, database unavailable). */
int sched_tick(sched_t *s);
/* Record every publish outcome not recorded yet, due or not (the drain): confirmations, and
 * refused dispatches moved back to requested. */
void sched_flush_reverts(sched_t *s);
/* Refused dispatches not moved back yet (they stay scheduled and unconfirmed if the executor
 * stops: the monitor returns them to requested). */
size_t sched_pending_reverts(const sched_t *s);

#endif
