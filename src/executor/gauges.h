/*
 * Values /metrics serves that the database or the broker knows, refreshed by a periodic job
 * every GAUGES_INTERVAL_MS (gauges.c) so that a scrape costs no query; and their collector.
 */
#ifndef WARREN_EXECUTOR_GAUGES_H
#define WARREN_EXECUTOR_GAUGES_H

#include "executor/consumer.h"
#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"
#include "warren/exec_status.h"
#include "warren/ids.h"
#include "warren/metrics.h"
#include "warren/mq.h"

#define GAUGES_INTERVAL_MS 10000

/* What one refresh read. */
typedef struct gauges_values {
    int64_t backlog[EXEC_STATUS_COUNT]; /* executions per non-final status */
    int64_t live_workers;
    struct {
        char action[ACTION_REF_MAX + 1];
        int64_t live; /* live workers offering it (0: every worker that offers it is gone) */
    } actions[64];
    size_t n_actions;
    struct {
        char action[ACTION_REF_MAX + 1];
        double age; /* seconds since it was paused */
    } paused[64];   /* paused actions (schema 035), at most 64 */
    size_t n_paused;
    int64_t waiting_paused; /* requested executions of a paused action */
    int64_t dlq_messages;   /* ready in the dead-letter queue (passive declare) */
    double dlq_oldest_age;  /* seconds: see gauges.c */
    int64_t dlq_nonempty_since_ms;
    /* Open investigation records, [0] pending and [1] investigating 
     * how many (the dead-letter tallies) and the oldest one's age in seconds (0: none). */
    int64_t dl_open[2];
    double dl_open_oldest_age[2];
    int64_t refreshed_ms; /* wall clock of the last refresh, 0: never */
    bool db_ok;
    /* Status changes in execution_events (and creations) since this executor started,
     * [from][to]; from EXEC_STATUS_COUNT is the creation. events_upto: the last event id
     * counted, -1 before the first refresh. The happy path's steps are in the stats (happy). */
    uint64_t transitions[EXEC_STATUS_COUNT + 1][EXEC_STATUS_COUNT];
    int64_t events_upto;
    int64_t created_upto; /* the last execution id counted as created, -1 before the first */
} gauges_values_t;

typedef struct gauges {
    const warren_config_t *cfg;      /* borrowed: executor.*, the dead-letter queue */
    dbconn_t *db;                    /* borrowed: the jobs lane (the refresh) */
    dbconn_t *writes;                /* borrowed: the writes lane (the breakers' states) */
    mq_client_t *pub;                /* borrowed: its breaker's state */
    mq_client_t *admin;              /* borrowed: the dead-letter queue's passive declare */
    const consumer_set_t *consumers; /* borrowed: their breakers' states */
    const consumer_t *dlq, *parked;  /* borrowed: dead letters held unacked */
    const executor_stats_t *stats;   /* borrowed: the happy path's steps (happy) */
    gauges_values_t values;          /* events_upto -1 before the first refresh */
} gauges_t;

/* One refresh of g->values. */
void gauges_run(gauges_t *g);
/* The collector for /metrics (arg: the gauges_t). */
void gauges_collect(metrics_out_t *o, void *arg);

#endif
