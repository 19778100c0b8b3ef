/*
 * The ABI for in-process C handlers: shared objects in the handlers directory that the worker
 * loads with dlopen() at start and calls on its event-loop thread.
 *
 * A handler module exports one descriptor under the symbol WARREN_HANDLER_SYMBOL:
 *
 *     #include <warren/handler.h>
 *     static int run(const char *params, size_t len, warren_handler_output_t *out) { ... }
 *     const warren_handler_t warren_handler_v1 = {
 *         .abi_version = WARREN_HANDLER_ABI, .action_ref = "example.upper", .run = run,
 *     };
 *
 * The worker refuses (and logs) a module whose abi_version differs from the WARREN_HANDLER_ABI
 * it was built with. Any change to the structs below bumps WARREN_HANDLER_ABI and the symbol name.
 *
 * Handlers run inline on the worker's only event loop: while run() executes, the worker neither
 * consumes, heartbeats nor reaps children. run() must therefore return within milliseconds and
 * never block on I/O; execution timeouts do not apply to it. Anything slow belongs in an
 * executable handler (see handlers/README.md). A crash in run() takes the worker down.
 */
#ifndef WARREN_HANDLER_H
#define WARREN_HANDLER_H

#include <stddef.h>
#include <stdint.h>

#define WARREN_HANDLER_ABI 1
#define WARREN_HANDLER_SYMBOL "warren_handler_v1"
/* Size of the error buffer in warren_handler_output_t, including the terminating NUL. */
#define WARREN_HANDLER_ERROR_MAX 256

/*
 * What run() reports back. The worker zeroes it before the call.
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

/*
 * Runs one execution. params_json is the dispatch's params as JSON text of len bytes, also
 * NUL-terminated, borrowed for the duration of the call ("{}" when the dispatch had none).
 * Returns 0 when the execution completed, or a non-zero code reported as the exit code of a
 * failed execution (together with out->error).
 */
typedef int (*warren_handler_run_fn)(const char *params_json, size_t len,
                                     warren_handler_output_t *out);

/* The descriptor a module exports; the worker reads it and never writes it. */
typedef struct warren_handler {
    uint32_t abi_version;   /* WARREN_HANDLER_ABI the module was built against */
    const char *action_ref; /* the action it serves: [A-Za-z0-9._-], not starting with '.' */
    warren_handler_run_fn run;
} warren_handler_t;

#endif
