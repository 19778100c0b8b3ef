/*
 * The worker's handler runner: runs one execution at a time per call, many at once, on the
 * worker's single libevent loop.
 *
 * Executable handlers (handlers_dir/<action_ref>) are spawned directly, without a shell, in a
 * process group of their own, with the params JSON on stdin and a minimal environment
 * (WARREN_EXECUTION_ID, WARREN_ACTION_REF, WARREN_ATTEMPT, WARREN_TIMEOUT_S, PATH). stdout is
 * the result, capped at max_output_bytes; the last stderr_tail_bytes of stderr are kept. On
 * timeout or cancel the whole group gets SIGTERM, then SIGKILL kill_grace_s later. When the
 * handler process exits, whatever it left running in its group is killed; when the worker dies,
 * however it dies, so is every handler group (spawn.h: a death signal and a guard process).
 *
 * In-process handlers (core.noop and the *.so modules in handlers_dir, see warren/handler.h):
 * version 1 runs inline inside runner_start(), version 2 on a thread of its own (inproc.h), asked
 * to stop on timeout or cancel and abandoned kill_grace_s later if it does not return. Their
 * results too are delivered through done_cb from the loop.
 *
 * The runner owns a SIGCHLD event on the base and ignores SIGPIPE process-wide (a handler that
 * closes stdin early must not kill the worker); handlers get default signal dispositions back.
 * It reaps every child of the loop's thread (waitpid(-1) with __WNOTHREAD): its handlers, its
 * guard, and orphans a worker running as PID 1 inherits; a process a version 2 handler starts on
 * its own thread is left for that handler to wait for. Use it from the process's first thread,
 * to which the kernel hands orphans.
 */
#ifndef WARREN_WORKER_RUNNER_H
#define WARREN_WORKER_RUNNER_H

#include <event2/event.h>
#include <json-c/json.h>
#include "warren/common.h"

typedef struct runner runner_t;

typedef struct runner_opts {
    const char *handlers_dir; /* copied */
    size_t max_output_bytes;  /* stdout kept; the rest is read and dropped */
    size_t stderr_tail_bytes; /* last bytes of stderr kept */
    int kill_grace_s;         /* SIGTERM -> SIGKILL delay */
    int default_timeout_s;    /* for jobs with timeout_s <= 0; <= 0 means no limit */
} runner_opts_t;

typedef enum {
    RUNNER_COMPLETED = 0,
    RUNNER_FAILED,
    RUNNER_TIMEOUT,
    RUNNER_CANCELLED, /* stopped by runner_cancel() */
} runner_outcome_t;

/* What to run: the runner turns it into a job of its own (its strings are copied). */
typedef struct runner_spec {
    int64_t execution_id;
    const char *action_ref;
    const char *params_json; /* NULL or params_len 0 means "{}" */
    size_t params_len;
    int attempt;
    int timeout_s; /* <= 0: opts.default_timeout_s */
    /* The dispatch's trace context (its trace_id header): the handler's TRACEPARENT when it is
     * a W3C traceparent; NULL or anything else: none. */
    const char *traceparent;
} runner_spec_t;

/*
 * The outcome of one execution. Every pointer is owned by the runner and valid only until
 * done_cb returns: copy what you keep.
 */
typedef struct runner_result {
    int64_t execution_id;
    const char *action_ref;
    runner_outcome_t outcome;
    int exit_code;           /* the handler's exit code (or run() return); -1 when none */
    int signal;              /* signal that ended the process, 0 when none */
    const char *result_json; /* JSON text: parsed stdout, or {"output": "..."} for other
                                  text; "{}" when a completed handler printed nothing; NULL when
                                  a failed or timed-out handler printed nothing */
    const char *stderr_tail; /* "" when none; always valid UTF-8 */
    bool truncated;          /* stdout went past max_output_bytes */
    int64_t duration_ms;
    const char *error; /* why it failed or timed out; NULL when completed */
} runner_result_t;

/* Called exactly once per started job, from the event loop, never from inside runner_start().
 * Do not call runner_free() from it. */
typedef void (*runner_done_cb)(const runner_result_t *result, void *arg);

/*
 * A runner on base (borrowed: it must outlive the runner). Loads the in-process handler
 * modules in opts->handlers_dir, logging and skipping modules it rejects. NULL with the reason
 * in err when it cannot start. The caller frees it with runner_free().
 */
runner_t *runner_new(struct event_base *base, const runner_opts_t *opts, char *err, size_t errlen);
/* A reload: max_output_bytes and default_timeout_s of opts for executions started from now on,
 * kill_grace_s for every stop from now on. handlers_dir and stderr_tail_bytes stay. */
void runner_set_limits(runner_t *r, const runner_opts_t *opts);
/* Kills every running handler group with SIGKILL, reaps the processes and frees the runner.
 * done_cb is not called for those jobs. */
void runner_free(runner_t *r);

/* True when action_ref has an in-process handler or an executable in the handlers directory. */
bool runner_has_handler(const runner_t *r, const char *action_ref);
/* Every action_ref this worker serves, for its announce: a new sorted JSON array of strings
 * that the caller releases with json_object_put(). NULL on OOM. */
json_object *runner_handlers(const runner_t *r);

/*
 * Start a job for spec (its strings are copied). Every problem with the job itself (unknown or
 * invalid action_ref, failing spawn) is reported as a FAILED result through done_cb, so each
 * accepted job produces exactly one result. Returns -1 (done_cb never called) only when memory
 * or the loop fail, with the reason in err.
 */
int runner_start(runner_t *r, const runner_spec_t *spec, runner_done_cb done_cb, void *arg,
                 char *err, size_t errlen) WARN_UNUSED;

/* Jobs started whose done_cb has not run yet. */
size_t runner_running(const runner_t *r);
/* In-process handler threads abandoned (they did not stop when asked) and still running. */
size_t runner_stuck(const runner_t *r);

/* Fast shutdown: SIGTERM every running handler group now (SIGKILL after kill_grace_s) and ask
 * every handler thread to stop. Each of those jobs still ends through done_cb, as FAILED with
 * error "terminated: worker shutting down". */
void runner_terminate_all(runner_t *r);

typedef enum {
    RUNNER_CANCEL_STOPPING = 0, /* told to stop now: done_cb reports RUNNER_CANCELLED */
    RUNNER_CANCEL_REPEATED,     /* an earlier cancel already told it to stop */
    RUNNER_CANCEL_ENDED,        /* it ended, or is being stopped for a timeout or a shutdown:
                                   done_cb reports that */
    RUNNER_CANCEL_UNKNOWN,      /* no job for this execution and attempt */
} runner_cancel_t;

/*
 * Cancel the job of (execution_id, attempt): SIGTERM its process group (SIGKILL kill_grace_s
 * later), or ask its thread to stop (abandoned kill_grace_s later), as for a timeout; its result
 * then says RUNNER_CANCELLED, error "Cancelled by request". A handler that has already exited
 * (not reaped yet) or returned is collected first and reports what really happened.
 */
runner_cancel_t runner_cancel(runner_t *r, int64_t execution_id, int attempt);

const char *runner_outcome_name(runner_outcome_t outcome);

/* Processes reaped that were not handlers: orphans of their descendants, which a worker
 * running as PID 1 (a container's init) inherits. */
uint64_t runner_orphans_reaped(const runner_t *r);

#endif
