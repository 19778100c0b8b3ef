/*
 * The queue deadline sweep (docs/flow-control.md, "Deadlines"): every second, executions still
 * requested past their queue_timeout_s (counted from their due time) fail with reason
 * queue_timeout, in one statement per batch. A dispatch already in a worker queue is bounded by
 * its AMQP expiration instead (scheduler.c, dlq_handler.c).
 */
#ifndef WARREN_EXECUTOR_DEADLINES_H
#define WARREN_EXECUTOR_DEADLINES_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"

#define DEADLINES_INTERVAL_MS 1000
/* The error of an execution that waited past its queue timeout, in both paths. */
#define QUEUE_TIMEOUT_ERROR "Queue timeout passed: no worker started it within its queue_timeout_s"

typedef struct deadlines {
    const warren_config_t *cfg; /* borrowed: executor.batch_size */
    dbconn_t *db;               /* borrowed: the jobs lane */
    executor_stats_t *stats;    /* borrowed */
} deadlines_t;

/* One round of the sweep. */
void deadlines_run(deadlines_t *d);

#endif
