/*
 * Retention (docs/dead-letters.md, "Retention"): closed dead letters, terminal executions and
 * their history pruned in bounded batches, a periodic job every retention.interval_s.
 */
#ifndef WARREN_EXECUTOR_RETENTION_H
#define WARREN_EXECUTOR_RETENTION_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"

typedef struct retention {
    const warren_config_t *cfg; /* borrowed: retention.*, *.retention_days */
    dbconn_t *db;               /* borrowed: the jobs lane */
    executor_stats_t *stats;    /* borrowed */
} retention_t;

/* One retention round. */
void retention_run(retention_t *r);

#endif
