/*
 * Answers that wait for an execution to end: GET /api/v1/executions/{id}?wait_s=N (docs/api.md,
 * "Waiting for the end"). The request's fiber registers the execution in execution_waiters
 * (schema 036) and reads its status in one transaction; unless it has ended, the fiber sleeps
 * until the listener hears warren_ended (listen.c), until N seconds pass or until the client
 * goes. One check at a time, on the API's read lane, asks which of the waited-for executions
 * ended and wakes their fibers. Without a listener (executor.listen_notify off, or its
 * connection down) the waiters look every second instead.
 */
#ifndef WARREN_EXECUTOR_API_WAIT_H
#define WARREN_EXECUTOR_API_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include "warren/fiber.h"

#define API_WAIT_MAX_S 60

typedef struct api_waiter api_waiter_t;

typedef struct api_waits {
    api_waiter_t *head; /* the requests waiting now, each on its fiber's stack */
    size_t n;
    bool checking;         /* a check fiber runs */
    bool again;            /* an announcement came while it ran: it looks once more */
    const bool *listening; /* borrowed: the listener hears warren_ended; NULL: never */
} api_waits_t;

struct api;
struct http_req;

/* The listener heard warren_ended (arg: the api_t), or its LISTEN (re)started: check. */
void api_waits_announce(void *arg);

/* GET /api/v1/executions/{id}?wait_s: wait_s (1..API_WAIT_MAX_S) seconds at most for id to
 * end. true once it ended, the time passed or the executor drains (the caller then reads the
 * execution); false after answering (404 for no such execution, 503 and 500 as api_query). */
bool api_wait_end(struct api *x, struct http_req *r, const char *id_text, int wait_s);
/* The executor drains: every waiter wakes now (and answers 503, as every request then does). */
void api_waits_release(struct api *x);

#endif
