/*
 * In-process handlers of ABI version 2 (warren/handler.h) on threads of their own: one thread
 * per execution, the call the handler sees (its stop_requested() and wait()), and the hand-over
 * of the result to the worker's loop. Only the loop thread calls these functions; the handler's
 * thread touches nothing but its own run.
 *
 * When run() returns, the thread writes 1 to the eventfd it was given, so the loop learns about
 * it without locks of its own: on readable it asks inproc_returned() and joins with
 * inproc_join(), which then does not block.
 */
#ifndef WARREN_WORKER_INPROC_H
#define WARREN_WORKER_INPROC_H

#include "warren/common.h"
#include "warren/handler.h"

typedef struct inproc_run inproc_run_t;

typedef struct inproc_spec {
    const warren_handler_v2_t *handler; /* borrowed: its module stays loaded while it runs */
    const char *params_json;            /* copied, like every string here */
    size_t params_len;
    int64_t execution_id;
    int attempt;
    const char *action_ref;
    int timeout_s;
    int64_t deadline_ms; /* CLOCK_MONOTONIC; 0: none */
    int wake_fd;         /* an eventfd the thread adds 1 to when run() returned */
} inproc_spec_t;

/* Start run() on a new thread that blocks every signal. NULL with the reason in err. Freed by
 * inproc_join(), or by the thread itself after inproc_abandon(). */
inproc_run_t *inproc_start(const inproc_spec_t *spec, char *err, size_t errlen);
/* run() has returned: inproc_join() will not block. */
bool inproc_returned(inproc_run_t *run);
/* Ask run() to stop for reason (WARREN_HANDLER_STOP_*); the first reason sticks. */
void inproc_stop(inproc_run_t *run, int reason);
/* Once run() returned: join the thread, hand over run()'s return code and its output (the caller
 * frees out->result_json), and free run. */
int inproc_join(inproc_run_t *run, warren_handler_output_t *out);
/* Give up on a run() that does not return: its thread frees run (and drops the output) when it
 * does, and writes nothing to the wake fd. False, with nothing done, when run() has returned
 * meanwhile: join it instead. */
bool inproc_abandon(inproc_run_t *run);
/* Abandoned threads whose run() has not returned yet, in this process. */
size_t inproc_abandoned(void);

#endif
