/*
 * The staleness detector (docs/dead-letters.md, "Staleness"): a periodic job every
 * staleness.interval_s that ends stale executions and warns of those near their threshold.
 */
#ifndef WARREN_EXECUTOR_STALENESS_H
#define WARREN_EXECUTOR_STALENESS_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"

typedef struct staleness {
    const warren_config_t *cfg; /* borrowed: staleness.*, executor.batch_size */
    dbconn_t *db;               /* borrowed: the jobs lane */
    executor_stats_t *stats;    /* borrowed */
} staleness_t;

/* One round of the detector. */
void staleness_run(staleness_t *s);

#endif
