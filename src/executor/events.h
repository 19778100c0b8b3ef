/*
 * Reliable dead-letter events (docs/dead-letters.md, "Events"): a periodic job every
 * events.interval_ms that publishes each record not yet emitted, and again after a failure once
 * its backoff has passed.
 */
#ifndef WARREN_EXECUTOR_EVENTS_H
#define WARREN_EXECUTOR_EVENTS_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/backoff.h"
#include "warren/config.h"
#include "warren/mq.h"

typedef struct events {
    const warren_config_t *cfg; /* borrowed: events.*, executor.batch_size */
    dbconn_t *db;               /* borrowed: the jobs lane */
    mq_client_t *pub;           /* borrowed: publishes the events */
    mq_client_t *admin;         /* borrowed: declares the events exchange (never publishes) */
    executor_stats_t *stats;    /* borrowed */
    backoff_t backoff;          /* failed publishes */
    int64_t next_ms;            /* monotonic: no publish before this */
} events_t;

/* One round of the emitter and reconciler. */
void events_run(events_t *e);

#endif
