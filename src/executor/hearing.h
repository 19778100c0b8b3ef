/*
 * Whether the executor hears heartbeats now, and since when (executor_state.heard_since,
 * schema 007). Heartbeats missed while it could not hear them (broker connection down, a batch
 * kept after a database error) are not the workers' fault: once it hears again, the stale rule
 * counts from then (warren_worker_fresh). A periodic job kicked by the pump, and asked by the
 * monitor before any verdict on heartbeats.
 */
#ifndef WARREN_EXECUTOR_HEARING_H
#define WARREN_EXECUTOR_HEARING_H

#include "executor/consumer.h"
#include "executor/dbconn.h"

typedef struct hearing {
    const consumer_t *heartbeats; /* borrowed: the heartbeats' consumer */
    dbconn_t *db;                 /* borrowed: the jobs lane, where heard_since is recorded */
    uint64_t heard_gaps;          /* heartbeats->gaps when heard_since was last recorded */
} hearing_t;

/* Does the executor hear heartbeats now, and has it recorded since when? Until then no worker
 * may be judged stale by its heartbeats. On a fiber (it may record on the jobs lane). */
bool hearing_check(hearing_t *h);

#endif
