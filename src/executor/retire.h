/*
 * Retiring workers gone for good (docs/retries.md): offline longer than
 * worker.retire_after_s, their queue taken back (every message recorded and its attempt ended)
 * and deleted. Run by the monitor, which hears heartbeats first.
 */
#ifndef WARREN_EXECUTOR_RETIRE_H
#define WARREN_EXECUTOR_RETIRE_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"

typedef struct retire {
    const warren_config_t *cfg; /* borrowed: worker.retire_after_s, executor.*, the broker */
    dbconn_t *db;               /* borrowed: the jobs lane */
    executor_stats_t *stats;    /* borrowed */
} retire_t;

/* One round: at most a few workers, each on a broker connection of the round's own. */
void retire_run(retire_t *r);

#endif
