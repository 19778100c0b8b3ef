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
#include "warren/mq.h"

/* Plain settings of the executor's jobs, taken from the configuration by exec_params_from(). */
typedef struct exec_params {
    int poll_interval_ms;
    int batch_size;
    int scheduled_timeout_s;
    int heartbeat_stale_factor;
    int monitor_interval_s;       /* 0: no timeout monitor */
    int dlq_retry_delay_ms;
    int stats_interval_s;
    const char *exchange;         /* executions topic exchange */
    const char *results_queue, *heartbeats_queue;
    const char *dlq_queue;        /* NULL when dead-lettering is disabled */
} exec_params_t;

typedef struct executor {
    const warren_config_t *cfg;   /* borrowed; topology declarations need it */
    exec_params_t p;
    struct event_base *base;
    dbconn_t db;
    mq_client_t *pub;             /* dispatches; never consumes */
    consumer_t results, heartbeats, dlq;
    exec_stats_t stats;
    sched_t sched;
    /* loop */
    struct event sched_ev;        /* the scheduler's tick */
    struct event pump_ev, monitor_ev, stats_ev;
    evloop_signals_t signals;
    bool draining;
} executor_t;

void exec_params_from(exec_params_t *p, const warren_config_t *cfg);
/* Run until SIGTERM/SIGINT (drain, exit 0) or SIGQUIT. Returns an exit code. */
int executor_run(const warren_config_t *cfg);

/* The consumers' handlers (consumer.h). results.c: ExecutionStatusChanged and
 * ExecutionCompleted; registry.c: WorkerHeartbeat; dlq_handler.c: the dead-letter queue, and
 * the last resort of every consumer, one delivery stored raw (reason store_error). */
extern const consumer_handler_t results_handler;
extern const consumer_handler_t registry_handler;
extern const consumer_handler_t dlq_handler;
extern const consumer_handler_t dlq_raw_handler;

/* monitor.c: scheduled too long -> failed; running on a stale worker -> abandoned. */
void monitor_run(executor_t *x);

#endif
