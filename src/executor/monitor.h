/*
 * The timeout monitor (monitor.c): executions nobody will finish, every
 * executor.monitor_interval_s; then the workers to retire and the cancels to send again. And the
 * statements the registry shares with it: a worker's older incarnation's executions abandoned,
 * and the attempts such statements end.
 */
#ifndef WARREN_EXECUTOR_MONITOR_H
#define WARREN_EXECUTOR_MONITOR_H

#include <libpq-fe.h>
#include "executor/attempts.h"
#include "executor/cancel.h"
#include "executor/consumer.h"
#include "executor/dbconn.h"
#include "executor/hearing.h"
#include "executor/retire.h"
#include "executor/stats.h"
#include "warren/config.h"

typedef struct monitor {
    const warren_config_t *cfg; /* borrowed: executor.* */
    dbconn_t *db;               /* borrowed: the jobs lane */
    executor_stats_t *stats;    /* borrowed */
    const consumer_t *results;  /* borrowed: no running timeout while results go unheard */
    hearing_t *hearing;         /* borrowed: no verdict on heartbeats until they are heard */
    retire_t *retire;           /* borrowed: run after the passes, while heartbeats are heard */
    cancel_sender_t *cancel;    /* borrowed: cancels sent again after the passes */
} monitor_t;

/* One round: scheduled too long -> failed; running on a stale worker -> abandoned; then the
 * workers to retire and the cancels to send again. */
void monitor_run(monitor_t *m);
/* Abandon up to `limit` running/canceling rows reported by an older process of a worker that
 * restarted (a newer incarnation heartbeats; schema 009), on the workers in `workers` (a text[]
 * literal; NULL: all), with their dead letters (worker_restarted). Rows changed: (id, worker, 1
 * when its dead letter was written, attempt, status, error) in *changed. For the registry's
 * transaction, right after a heartbeat names a new incarnation, and the monitor's passes. */
int monitor_restarted(PGconn *db, const char *workers, int limit, PGresult **changed, char *err,
                      size_t errlen) WARN_UNUSED;
/* The attempts the rows of a monitor statement (monitor_restarted's too) ended: recorded and
 * perhaps retried (attempts.h), as outcome (a row that became cancelled: cancelled); suspect:
 * their workers lost a confirmed dispatch. */
int monitor_end_attempts(PGconn *db, PGresult *changed, attempt_outcome_t outcome, bool suspect,
                         executor_stats_t *counts, char *err, size_t errlen) WARN_UNUSED;

#endif
