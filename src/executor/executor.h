/*
 * The executor daemon: one libevent loop, a publishing MessageClient (dispatches, with
 * confirms), one consuming MessageClient per queue (results, heartbeats, dead letters), and
 * PostgreSQL connections by lane (docs/executor.md): dispatch (the scheduler), writes (what the
 * consumers apply), jobs (the periodic jobs) and the API's pool. Its work — scheduler,
 * consumers, periodic jobs, API requests — runs on fibers (warren/fiber.h) started from the
 * loop's timers and read events, so a statement or a confirm that takes long holds up its own
 * lane and nothing else; this header is what they share.
 */
#ifndef WARREN_EXECUTOR_EXECUTOR_H
#define WARREN_EXECUTOR_EXECUTOR_H

#include <event2/event.h>
#include "executor/api_keys.h"
#include "executor/consumer.h"
#include "executor/dbconn.h"
#include "executor/listen.h"
#include "executor/scheduler.h"
#include "executor/stats.h"
#include "warren/backoff.h"
#include "warren/config.h"
#include "warren/evloop.h"
#include "warren/exec_status.h"
#include "warren/executor.h"
#include "warren/http.h"
#include "warren/ids.h"
#include "warren/metrics.h"
#include "warren/mq.h"
#include "warren/retry.h"

/* Values /metrics serves that the database or the broker knows, refreshed by a timer
 * (gauges.c) so that a scrape costs no query. */
typedef struct executor_gauges {
    int64_t backlog[EXEC_STATUS_COUNT]; /* executions per non-final status */
    int64_t live_workers;
    struct {
        char action[ACTION_REF_MAX + 1];
        int64_t live; /* live workers offering it (0: every worker that offers it is gone) */
    } actions[64];
    size_t n_actions;
    int64_t dlq_messages;  /* ready in the dead-letter queue (passive declare) */
    double dlq_oldest_age; /* seconds: see gauges.c */
    int64_t dlq_nonempty_since_ms;
    int64_t refreshed_ms; /* wall clock of the last refresh, 0: never */
    bool db_ok;
    /* Status changes in execution_events since this executor started, [from][to]; from
     * EXEC_STATUS_COUNT is the creation. events_upto: the last event id counted, -1 before the
     * first refresh. */
    uint64_t transitions[EXEC_STATUS_COUNT + 1][EXEC_STATUS_COUNT];
    int64_t events_upto;
    int64_t created_upto; /* the last execution id counted as created, -1 before the first */
} executor_gauges_t;

/* A periodic job: run on a fiber of its own from its timer, never two at once (executor.c). */
typedef struct executor_job {
    struct event ev;
    struct executor *x;
    const char *name;
    void (*run)(struct executor *x);
    bool running;
} executor_job_t;

typedef struct executor {
    warren_config_t *cfg; /* borrowed; the one source of every setting, reloaded on SIGHUP */
    struct event_base *base;
    dbconn_t db_dispatch; /* the scheduler's claims */
    dbconn_t db_writes;   /* what follows the broker: results, heartbeats, dead letters */
    dbconn_t db_jobs;     /* the periodic jobs */
    dbc_pool_t api_reads, api_writes; /* the HTTP API (GET; POST and PATCH) */
    mq_client_t *pub;                 /* dispatches; never consumes */
    mq_client_t *admin; /* declares and passive declares; never publishes, so never blocked */
    consumer_t results, heartbeats, dlq, parked; /* parked: the parking queue's dead letters */
    executor_stats_t stats;
    sched_t sched;
    listener_t listener; /* new work announced by the database (executor.listen_notify) */
    /* loop */
    struct event sched_ev; /* the scheduler's tick */
    struct event pump_ev, stats_ev, watchdog_ev, drain_ev;
    /* Periodic jobs on timers of their own, each skipped while draining (executor.c, jobs[]):
     * the monitor, staleness, dead-letter events, bulk redrive tasks, retention, the gauges,
     * and recording that heartbeats are heard again. */
    executor_job_t jobs[7];
    int64_t drain_deadline_ms; /* monotonic: fibers still running then are cancelled */
    backoff_t events_backoff;  /* failed dead-letter event publishes (events.c) */
    int64_t events_next_ms;    /* monotonic: no event publish before this */
    int redrive_failures;      /* bulk redrive batches the database refused in a row */
    evloop_signals_t signals;
    bool draining;
    bool ticking;    /* the scheduler's fiber runs */
    bool wake_again; /* woken during the tick (results applied meanwhile): tick again at once */
    /* the HTTP API, health and metrics (api.c) */
    http_server_t *api;
    api_keys_t keys;
    api_keys_t keys_next; /* read by a reload's prepare step, taken by its apply step */
    metrics_registry_t metrics;
    executor_gauges_t gauges;
    int64_t loop_beat_ms;        /* monotonic time of the last pump tick: the loop turns */
    uint64_t db_reconnects_seen; /* lanes' reconnects when the consumers last retried at once */
    uint64_t heard_gaps;         /* heartbeats.gaps when heard_since was last recorded */
} executor_t;

/* The consumers' handlers (consumer.h). results.c: ExecutionStatusChanged and
 * ExecutionCompleted; registry.c: WorkerHeartbeat; dlq_handler.c: the dead-letter queue, and
 * the last resort of every consumer, one delivery stored raw (reason store_error). */
extern const consumer_handler_t results_handler;
extern const consumer_handler_t registry_handler;
extern const consumer_handler_t dlq_handler;
extern const consumer_handler_t dlq_parked_handler;
/* dlq_handler.c: how long a dead letter has waited since it was dead-lettered into the
 * dead-letter queue, in seconds (0 when its x-death says nothing). */
int64_t dlq_age_s(const mq_delivery_t *d, int64_t now_s);
extern const consumer_handler_t dlq_raw_handler;

/* The consumers this executor runs (results, heartbeats; dead-letters and parked-dead-letters
 * when dead-lettering is enabled) into out; returns how many. */
#define EXECUTOR_MAX_CONSUMERS 4
size_t executor_consumers(executor_t *x, consumer_t *out[EXECUTOR_MAX_CONSUMERS]);

/* The oldest dead letter held unacked (a database outage keeps them) by the dead-letter and
 * parking consumers, in seconds since it was dead-lettered (x-death); 0 when none. */
uint64_t executor_held_dead_letter_age_s(const executor_t *x);

/* Does the executor hear heartbeats now, and has it recorded since when (executor_state
 * .heard_since, schema 007)? Until then no worker may be judged stale by its heartbeats. On a
 * fiber (it may record on the jobs lane). */
bool executor_hearing(executor_t *x);

/* The lanes' failed units of work, and whether each lane that was ever used holds a
 * connection now. */
uint64_t executor_db_errors(const executor_t *x);
bool executor_db_up(const executor_t *x);

/* monitor.c: scheduled too long -> failed; running on a stale worker -> abandoned. */
void monitor_run(executor_t *x);
/* monitor.c: abandon up to `limit` running/canceling rows reported by an older process of a
 * worker that restarted (a newer incarnation heartbeats; schema 009), on the workers in
 * `workers` (a text[] literal; NULL: all), with their dead letters (worker_restarted). Rows
 * changed: (id, worker, 1 when its dead letter was written, attempt, status, error) in
 * *changed. For the registry's transaction, right after a heartbeat names a new incarnation,
 * and the monitor's passes. */
int monitor_restarted(PGconn *db, const char *workers, int limit, PGresult **changed, char *err,
                      size_t errlen) WARN_UNUSED;
/* monitor.c: the attempts the rows of a monitor statement (monitor_restarted's too) ended:
 * recorded and perhaps retried (attempts.h), as outcome (a row that became cancelled: cancelled);
 * suspect: their workers lost a confirmed dispatch. */
int monitor_end_attempts(PGconn *db, PGresult *changed, attempt_outcome_t outcome, bool suspect,
                         executor_stats_t *counts, char *err, size_t errlen) WARN_UNUSED;

/* staleness.c: one round of the staleness detector (staleness.*). */
void staleness_run(executor_t *x);
/* redrive_tasks.c: one turn of every active bulk redrive task, at redrive_tasks_tick_ms(). */
void redrive_tasks_run(executor_t *x);
int64_t redrive_tasks_tick_ms(void);
/* retention.c: one retention round (retention.*, *.retention_days). */
void retention_run(executor_t *x);
/* events.c: one round of the dead-letter event emitter and reconciler (events.*). */
void events_run(executor_t *x);

/* api.c: the HTTP server on api.listen (none when ""): API routes, /livez, /readyz, /metrics.
 * -1 (logged) when keys or the address are wrong. */
int api_start(executor_t *x) WARN_UNUSED;
void api_stop(executor_t *x);
/* api.c, SIGHUP: before anything changes, read the keys the loaded configuration names
 * (api.keys, api.keys_file: the file's text may have changed with no key of the configuration)
 * and check them as api_start does; -1 with the problem in err refuses the reload. Nothing
 * while the API is off (api.listen needs a restart). */
int api_keys_prepare(executor_t *x, const warren_config_t *loaded, char *err,
                     size_t errlen) WARN_UNUSED;
/* After the reload: the prepared keys replace the running ones; logs their number and names. */
void api_keys_take(executor_t *x);

/* cancel.c: the control message that tells worker to cancel execution_id (id: its text) at
 * attempt, requested by by (the contract the worker reads: cancel_from_payload, its control
 * queue bound to topo_cancel_key); MQ_OK or the mq_status_t of the failure, logged and counted.
 * And from the monitor, the control message again for every canceling execution whose worker
 * is live and was told more than a monitor round ago. */
int cancel_publish(executor_t *x, const char *id, int64_t execution_id, int attempt,
                   const char *worker, const char *by);
void cancel_resend(executor_t *x);
/* retire.c: retire the workers offline longer than worker.retire_after_s (the monitor). */
void retire_run(executor_t *x);

/* gauges.c: one refresh of x->gauges (a periodic job, every GAUGES_INTERVAL_MS); the
 * collector for /metrics. */
#define GAUGES_INTERVAL_MS 10000
void gauges_run(executor_t *x);
void gauges_collect(metrics_out_t *o, void *arg);

#endif
