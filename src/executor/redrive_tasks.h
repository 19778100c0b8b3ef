/*
 * Bulk redrive tasks (docs/dead-letters.md, "Bulk redrive"): a periodic job every
 * redrive_tasks_tick_ms() that gives each active task a turn (the API that creates and shows
 * them is api_redrive_tasks.c).
 */
#ifndef WARREN_EXECUTOR_REDRIVE_TASKS_H
#define WARREN_EXECUTOR_REDRIVE_TASKS_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"

typedef struct redrive_tasks {
    const warren_config_t *cfg; /* dead_letter.max_redrives */
    dbconn_t *db;               /* borrowed: the jobs lane */
    executor_stats_t *stats;    /* borrowed */
    int failures;               /* batches the database refused in a row */
    unsigned ticks;             /* turns so far: outcomes are read every REDRIVE_OUTCOME_TICKS */
} redrive_tasks_t;

/* One turn of every active task. */
void redrive_tasks_run(redrive_tasks_t *t);
int64_t redrive_tasks_tick_ms(void);

#endif
