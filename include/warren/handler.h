/*
 * The ABI for in-process C handlers: shared objects in the handlers directory that the worker
 * loads with dlopen() at start. Header only: a module links nothing of warren's.
 *
 * Version 2 (this is the one to write). A module exports a warren_handler_v2_t under the symbol
 * WARREN_HANDLER_SYMBOL_V2:
 *
 *     #include <warren/handler.h>
 *     static int run(const warren_handler_call_t *call, warren_handler_output_t *out) { ... }
 *     const warren_handler_v2_t warren_handler_v2 = {
 *         .abi_version = WARREN_HANDLER_ABI_V2, .action_ref = "example.upper", .run = run,
 *     };
 *
 * run() executes on a thread of its own, one per execution, so it may block and take its time
 * while the worker goes on consuming, heartbeating and reaping. The worker asks it to stop when
 * the execution is cancelled, passes its timeout or the worker shuts down: call->stop_requested()
 * then answers why, and call->wait() returns early. A handler that stops returns (any code): the
 * execution ends as cancelled, timed out or terminated. One that does not return within the
 * worker's kill_grace_s after being asked is abandoned: its execution ends all the same and its
 * thread runs on unwatched until run() returns. A thread cannot be killed, and a crash in run()
 * takes the worker down: untrusted or unbounded work belongs in an executable handler.
 *
 * Version 1. A warren_handler_t under WARREN_HANDLER_SYMBOL; run() gets the params alone and
 * executes inline on the worker's only event loop: while it runs the worker neither consumes,
 * heartbeats nor reaps children, so it must return within milliseconds and never block, and it
 * can neither time out nor be cancelled. Version 1 modules keep loading and behave as they did.
 *
 * A module may export both descriptors (for workers older than version 2, which know only the
 * first): this worker then uses version 2. It refuses (and logs) a module whose descriptor has
 * another abi_version than its symbol's. Any change to the structs below is a new version, with a
 * new symbol name.
 */
#ifndef WARREN_HANDLER_H
#define WARREN_HANDLER_H

#include <stddef.h>
#include <stdint.h>

/* Version 1 (the names predate version 2 and stay, so version 1 sources build unchanged). */
#define WARREN_HANDLER_ABI 1
#define WARREN_HANDLER_SYMBOL "warren_handler_v1"
/* Version 2. */
#define WARREN_HANDLER_ABI_V2 2
#define WARREN_HANDLER_SYMBOL_V2 "warren_handler_v2"
/* What run() returns (both versions) for a temporary failure worth a retry: the exit code of an
 * executable handler that exits with EX_TEMPFAIL (sysexits.h), which the retry policy's
 * `tempfail` names (docs/retries.md). A define, not a change of the structs: any version. */
#define WARREN_HANDLER_TEMPFAIL 75
/* Size of the error buffer in warren_handler_output_t, including the terminating NUL. */
#define WARREN_HANDLER_ERROR_MAX 256

/*
 * What run() reports back (both versions). The worker zeroes it before the call.
 * - result_json: NULL or NUL-terminated JSON text allocated with malloc(). The worker takes
 *   ownership and releases it with free() (handler and worker share the process's libc).
 *   NULL on success means the result {}. Text that is not valid JSON is kept as
 *   {"output": "<text>"}, like the stdout of an executable handler.
 * - error: a message the handler writes (snprintf) when it fails; it stays owned by the worker.
 */
typedef struct warren_handler_output {
    char *result_json;
    char error[WARREN_HANDLER_ERROR_MAX];
} warren_handler_output_t;

/* ---- version 2 ---------------------------------------------------------------------------- */

/* What stop_requested() and wait() answer: go on, or why the worker wants run() to return. */
#define WARREN_HANDLER_GO_ON 0
#define WARREN_HANDLER_STOP_CANCELLED 1 /* the execution was cancelled */
#define WARREN_HANDLER_STOP_TIMEOUT 2   /* its timeout passed */
#define WARREN_HANDLER_STOP_SHUTDOWN 3  /* the worker is shutting down */

typedef struct warren_handler_call warren_handler_call_t;

/* One execution, borrowed by run() until it returns. */
struct warren_handler_call {
    const char *params_json; /* the dispatch's params: params_len bytes, NUL-terminated ("{}" when
                                the dispatch had none) */
    size_t params_len;
    int64_t execution_id;
    int attempt; /* 1 on the first delivery */
    const char *action_ref;
    int timeout_s;       /* the execution's time limit; 0: none */
    int64_t deadline_ms; /* when it passes, CLOCK_MONOTONIC in milliseconds; 0: none */
    /* WARREN_HANDLER_GO_ON, or the WARREN_HANDLER_STOP_* reason once the worker wants run() to
     * return. Cheap (an atomic read); callable from any thread until run() returns. */
    int (*stop_requested)(const warren_handler_call_t *call);
    /* Sleep up to ms milliseconds, waking at once when a stop is requested; returns what
     * stop_requested() returns then. The way to wait inside a handler without missing a cancel. */
    int (*wait)(const warren_handler_call_t *call, int64_t ms);
    void *worker; /* the worker's own state; not for the handler */
};

/*
 * Runs one execution on its own thread. Returns 0 when the execution completed, or a non-zero
 * code reported as the exit code of a failed execution (together with out->error). After a stop
 * request the execution ends as the request says, whatever run() returns; its output is kept.
 */
typedef int (*warren_handler_run_v2_fn)(const warren_handler_call_t *call,
                                        warren_handler_output_t *out);

/* The version 2 descriptor a module exports; the worker reads it and never writes it. */
typedef struct warren_handler_v2 {
    uint32_t abi_version;   /* WARREN_HANDLER_ABI_V2 */
    const char *action_ref; /* the action it serves: [A-Za-z0-9._-], not starting with '.' */
    warren_handler_run_v2_fn run;
} warren_handler_v2_t;

/* ---- version 1 ---------------------------------------------------------------------------- */

/*
 * Runs one execution inline on the worker's event loop. params_json is the dispatch's params as
 * JSON text of len bytes, also NUL-terminated, borrowed for the duration of the call ("{}" when
 * the dispatch had none). Returns 0 when the execution completed, or a non-zero code reported as
 * the exit code of a failed execution (together with out->error).
 */
typedef int (*warren_handler_run_fn)(const char *params_json, size_t len,
                                     warren_handler_output_t *out);

/* The version 1 descriptor a module exports; the worker reads it and never writes it. */
typedef struct warren_handler {
    uint32_t abi_version;   /* WARREN_HANDLER_ABI (1) */
    const char *action_ref; /* the action it serves: [A-Za-z0-9._-], not starting with '.' */
    warren_handler_run_fn run;
} warren_handler_t;

#endif
