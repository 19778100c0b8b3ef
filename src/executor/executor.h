/*
 * The executor daemon: one libevent loop, a publishing MessageClient (dispatches, with
 * confirms), one consuming MessageClient per queue (results, heartbeats, dead letters), and
 * PostgreSQL connections by lane (docs/executor.md): dispatch (the scheduler), writes (what the
 * consumers apply), jobs (the periodic jobs) and the API's pool. Its work — scheduler,
 * consumers, periodic jobs, API requests — runs on fibers (warren/fiber.h) started from the
 * loop's timers and read events, so a statement or a confirm that takes long holds up its own
 * lane and nothing else. The daemon owns every part; each job has a context of its own (its
 * header) that borrows only what it uses, and this header declares the daemon alone.
 */
#ifndef WARREN_EXECUTOR_EXECUTOR_H
#define WARREN_EXECUTOR_EXECUTOR_H

#include <event2/event.h>
#include "executor/api.h"
#include "executor/cancel.h"
#include "executor/consumer.h"
#include "executor/dbconn.h"
#include "executor/events.h"
#include "executor/gauges.h"
#include "executor/hearing.h"
#include "executor/listen.h"
#include "executor/monitor.h"
#include "executor/redrive_tasks.h"
#include "executor/retention.h"
#include "executor/retire.h"
#include "executor/scheduler.h"
#include "executor/staleness.h"
#include "executor/deadlines.h"
#include "executor/stats.h"
#include "warren/config.h"
#include "warren/evloop.h"
#include "warren/executor.h"
#include "warren/metrics.h"
#include "warren/mq.h"

/* A periodic job: run(ctx) on a fiber of its own from its timer, never two at once
 * (executor.c). */
typedef struct executor_job {
    struct event ev;
    struct executor *x;
    const char *name;
    void (*run)(void *ctx);
    void *ctx; /* the job's context, a part of x */
    bool running;
} executor_job_t;

typedef struct executor {
    warren_config_t *cfg; /* borrowed; the one source of every setting, reloaded on SIGHUP */
    struct event_base *base;
    dbconn_t db_dispatch; /* the scheduler's claims */
    dbconn_t db_writes;   /* what follows the broker: results, heartbeats, dead letters */
    dbconn_t db_jobs;     /* the periodic jobs */
    dbc_pool_t api_reads, api_writes; /* the HTTP API (GET; POST and PATCH) */
    dbc_lanes_t lanes;                /* all five, as the stats line and the API report them */
    mq_client_t *pub;                 /* dispatches; never consumes */
    mq_client_t *admin; /* declares and passive declares; never publishes, so never blocked */
    consumer_t results, heartbeats, dlq, parked; /* parked: the parking queue's dead letters */
    consumer_set_t consumers;                    /* those of the four this executor runs */
    executor_stats_t stats;
    metrics_registry_t metrics; /* the counters, the API's parts and the gauges */
    listener_t listener;        /* new work announced by the database (executor.listen_notify) */
    /* The jobs' contexts: each borrows from the fields above what its job uses. */
    sched_t sched;
    monitor_t monitor;
    hearing_t hearing;
    retire_t retire;
    cancel_sender_t cancel;
    staleness_t staleness;
    deadlines_t deadlines;
    events_t events;
    redrive_tasks_t redrive_tasks;
    retention_t retention;
    gauges_t gauges;
    api_t api; /* the HTTP API, health and metrics */
    /* loop */
    struct event sched_ev; /* the scheduler's tick */
    struct event pump_ev, stats_ev, watchdog_ev, drain_ev;
    /* Periodic jobs on timers of their own, each skipped while draining (executor.c, jobs[]):
     * the monitor, staleness, queue deadlines, dead-letter events, bulk redrive tasks,
     * retention, the gauges, and recording that heartbeats are heard again. */
    executor_job_t jobs[8];
    int64_t drain_deadline_ms; /* monotonic: fibers still running then are cancelled */
    evloop_signals_t signals;
    bool draining;
    bool ticking;    /* the scheduler's fiber runs */
    bool wake_again; /* woken during the tick (results applied meanwhile): tick again at once */
    int64_t loop_beat_ms;        /* monotonic time of the last pump tick: the loop turns */
    uint64_t db_reconnects_seen; /* lanes' reconnects when the consumers last retried at once */
} executor_t;

#endif
