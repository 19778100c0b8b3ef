/*
 * The executions a worker holds, keyed by (execution_id, attempt): accepted but not started yet
 * (held), running, or finished with their completion not yet confirmed by the broker. Also the
 * keys of the last finished ones, so a redelivered dispatch is recognised and not run twice.
 * Pure bookkeeping: no I/O, no clock.
 */
#ifndef WARREN_WORKER_EXECS_H
#define WARREN_WORKER_EXECS_H

#include "warren/common.h"
#include "warren/envelope.h"
#include "warren/ids.h"

/* Finished keys remembered for duplicate detection. */
#define EXECS_RECENT 1024

/*
 * How far an execution has come in this worker: bookkeeping, not its status in the database
 * (exec_status_t, warren/exec_status.h), which the executor owns and the worker reports to.
 *   STAGE_HELD      accepted from the queue, not started yet (waiting for room, intake.c)
 *   STAGE_RUNNING   its handler runs
 *   STAGE_FINISHED  its handler ended; the record stays until the broker confirms the completion
 */
typedef enum { STAGE_HELD = 0, STAGE_RUNNING, STAGE_FINISHED, STAGE_COUNT } execs_stage_t;

typedef struct execs_record {
    struct execs_record *prev, *next;
    int64_t execution_id;
    int attempt;
    execs_stage_t stage;
    void *owner; /* the worker, for the runner's callback */
    /* The broker confirmed this execution's running status: its deliveries may be acked. */
    bool running_reported;
    /* Deliveries of this dispatch not acked yet (a redelivery adds one). */
    uint64_t *tags;
    size_t n_tags, cap_tags;
    /* The job, kept from the dispatch until it starts. */
    char action_ref[ACTION_REF_MAX + 1];
    char *params; /* JSON text; NULL means {} */
    size_t params_len;
    int timeout_s;
    char trace_id[ENVELOPE_ID_MAX];
    char started_at[40]; /* RFC 3339, set when started */
} execs_record_t;

typedef struct execs_key {
    int64_t execution_id;
    int attempt;
} execs_key_t;

typedef struct execs {
    execs_record_t *head, *tail; /* arrival order: held executions start first come, first served */
    size_t count[STAGE_COUNT];   /* records per stage */
    execs_key_t recent[EXECS_RECENT];
    size_t recent_next, recent_len;
} execs_t;

void execs_init(execs_t *t);
/* Frees every record (nothing is acked or published). */
void execs_free(execs_t *t);

execs_record_t *execs_find(const execs_t *t, int64_t execution_id, int attempt);
/* A new held record at the tail; NULL on OOM. Freed by execs_remove() or execs_free(). */
execs_record_t *execs_add(execs_t *t, int64_t execution_id, int attempt);
/* Remove and free x; `finished` remembers its key for execs_recent(). */
void execs_remove(execs_t *t, execs_record_t *x, bool finished);
void execs_set_stage(execs_t *t, execs_record_t *x, execs_stage_t stage);
size_t execs_count(const execs_t *t, execs_stage_t stage);
/* The oldest held record, or NULL. */
execs_record_t *execs_first_held(const execs_t *t);
/* True when (execution_id, attempt) finished here recently. */
bool execs_recent(const execs_t *t, int64_t execution_id, int attempt);

/* Remember a delivery to ack later; -1 on OOM. */
int execs_add_tag(execs_record_t *x, uint64_t tag) WARN_UNUSED;
/* Copy the params JSON text; -1 on OOM. */
int execs_set_params(execs_record_t *x, const char *json, size_t len) WARN_UNUSED;

#endif
