/*
 * Choosing a worker for each claimed execution. Pure: the scheduler loads the live workers
 * and their in-flight counts, this decides, the scheduler writes the outcome.
 *
 * Policy: a pinned execution goes to its pinned worker, live or not (operators pin on
 * purpose; a dead worker's queue expires it through the dead-letter path). Otherwise among
 * live workers offering the action with spare capacity, the least loaded by in-flight /
 * capacity, then by fewer in flight, then by id order: work spreads in proportion to
 * capacity, and the choice is deterministic for tests. Each assignment counts towards the
 * worker's load for the rest of the batch.
 */
#ifndef WARREN_EXECUTOR_ASSIGN_H
#define WARREN_EXECUTOR_ASSIGN_H

#include "warren/common.h"

typedef struct assign_worker {
    const char *id;
    const char *const *capabilities;
    size_t n_capabilities;
    int capacity;
    int in_flight; /* scheduled + running on it; updated as work is assigned */
} assign_worker_t;

#define ASSIGN_NONE (-1)   /* stays requested, see wait_reason */
#define ASSIGN_PINNED (-2) /* to its pinned worker */

typedef struct assign_job {
    const char *action_ref;
    const char *pinned_worker; /* NULL when not pinned */
    int worker;                /* out: index into workers, ASSIGN_NONE or ASSIGN_PINNED */
    char wait_reason[320];     /* out: why it waits, when ASSIGN_NONE */
} assign_job_t;

/* Decide jobs[0..nj) in order (oldest first) over workers[0..nw). */
void assign_batch(assign_worker_t *workers, size_t nw, assign_job_t *jobs, size_t nj);

#endif
