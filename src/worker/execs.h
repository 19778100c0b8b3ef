/*
 * The executions a worker holds, keyed by (execution_id, attempt): accepted but not started yet
 * (held), running, or finished with their completion not yet confirmed by the broker. Also the
 * keys of the last finished ones with the completion each sent, so a repeated dispatch is not
 * run twice but answered with that completion again. Pure bookkeeping: no I/O, no clock.
 */
#ifndef WARREN_WORKER_EXECS_H
#define WARREN_WORKER_EXECS_H

#include "warren/common.h"
#include "warren/envelope.h"
#include "warren/ids.h"
#include "worker/report_msg.h"

/* Finished keys remembered for duplicate detection. */
#define EXECS_RECENT 1024
/* Memory for the completions kept with them: past it the oldest lose theirs (not their keys). */
#define EXECS_RECENT_BYTES (16 * 1024 * 1024)

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
    int64_t start_deadline_us; /* never started past it (wall clock, us); 0: none */
    char trace_id[ENVELOPE_ID_MAX];
    char started_at[40]; /* RFC 3339, set when started */
    /* The completion it sent (report_msg_completion_keep), owned; NULL until it finished. A
     * held record that has one is a repeated dispatch: it is answered, not started. */
    report_msg_completion_t *kept;
    size_t kept_bytes;
} execs_record_t;

typedef struct execs_recent {
    int64_t execution_id; /* 0: a free slot */
    int attempt;
    report_msg_completion_t *kept; /* owned; NULL once reclaimed for memory */
    size_t kept_bytes;
} execs_recent_t;

typedef struct execs {
    execs_record_t *head, *tail; /* arrival order: held executions start first come, first served */
    size_t count[STAGE_COUNT];   /* records per stage */
    execs_recent_t recent[EXECS_RECENT]; /* a ring, oldest first from recent_next once full */
    size_t recent_next, recent_len;
    size_t recent_bytes; /* of the kept completions */
} execs_t;

void execs_init(execs_t *t);
/* Frees every record (nothing is acked or published). */
void execs_free(execs_t *t);

execs_record_t *execs_find(const execs_t *t, int64_t execution_id, int attempt);
/* A new held record at the tail; NULL on OOM. Freed by execs_remove() or execs_free(). */
execs_record_t *execs_add(execs_t *t, int64_t execution_id, int attempt);
/* Remove and free x. A finished one, and any that holds a kept completion, is remembered with
 * it for execs_recent() and execs_recent_take(). */
void execs_remove(execs_t *t, execs_record_t *x, bool finished);
void execs_set_stage(execs_t *t, execs_record_t *x, execs_stage_t stage);
size_t execs_count(const execs_t *t, execs_stage_t stage);
/* The oldest held record, or NULL. */
execs_record_t *execs_first_held(const execs_t *t);
/* True when (execution_id, attempt) finished here recently. */
bool execs_recent(const execs_t *t, int64_t execution_id, int attempt);
/* The same, and it forgets the key, handing over its kept completion (*kept NULL when that
 * was reclaimed for memory) to a record that puts it back when removed. */
bool execs_recent_take(execs_t *t, int64_t execution_id, int attempt,
                       report_msg_completion_t **kept, size_t *kept_bytes);

/* Remember a delivery to ack later; -1 on OOM. */
int execs_add_tag(execs_record_t *x, uint64_t tag) WARN_UNUSED;
/* Copy the params JSON text; -1 on OOM. */
int execs_set_params(execs_record_t *x, const char *json, size_t len) WARN_UNUSED;

#endif
