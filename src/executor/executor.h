/*
 * The executor daemon: one libevent loop owning one PostgreSQL connection, a publishing
 * MessageClient (dispatches, with confirms) and one consuming MessageClient per queue
 * (results, heartbeats, dead letters), so a confirm wait never reads a delivery. Its jobs —
 * scheduler, results, worker registry, dead-letter handler, timeout monitor — are modules
 * that run from the loop's timers and read events; this header is what they share.
 */
#ifndef WARREN_EXECUTOR_EXECUTOR_H
#define WARREN_EXECUTOR_EXECUTOR_H

#include <event2/event.h>
#include "executor/consumer.h"
#include "executor/dbconn.h"
#include "executor/scheduler.h"
#include "executor/stats.h"
#include "warren/config.h"
#include "warren/evloop.h"
#include "warren/executor.h"
#include "warren/mq.h"

typedef struct executor {
    warren_config_t *cfg; /* borrowed; the one source of every setting, reloaded on SIGHUP */
    struct event_base *base;
    dbconn_t db;
    mq_client_t *pub;                            /* dispatches; never consumes */
    consumer_t results, heartbeats, dlq, parked; /* parked: the parking queue's dead letters */
    executor_stats_t stats;
    sched_t sched;
    /* loop */
    struct event sched_ev; /* the scheduler's tick */
    struct event pump_ev, monitor_ev, stats_ev, watchdog_ev;
    evloop_signals_t signals;
    bool draining;
    uint64_t db_reconnects_seen; /* db.reconnects when the consumers last retried at once */
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

/* Does the executor hear heartbeats now, and has it recorded since when (executor_state
 * .heard_since, schema 007)? Until then no worker may be judged stale by its heartbeats. */
bool executor_hearing(executor_t *x);

/* monitor.c: scheduled too long -> failed; running on a stale worker -> abandoned. */
void monitor_run(executor_t *x);
/* monitor.c: abandon up to `limit` running/canceling rows reported by an older process of a
 * worker that restarted (a newer incarnation heartbeats; schema 009), on the workers in
 * `workers` (a text[] literal; NULL: all), with their dead letters (worker_restarted). Rows
 * changed: (id, worker, 1 when its dead letter was written) in *changed. For the registry's
 * transaction, right after a heartbeat names a new incarnation, and the monitor's passes. */
int monitor_restarted(PGconn *db, const char *workers, int limit, PGresult **changed, char *err,
                      size_t errlen) WARN_UNUSED;

#endif
