/*
 * The messages a worker publishes, built as envelope bodies: the running status, the completion
 * and the heartbeat (payload fields in docs/worker.md). Pure: no I/O; times come in as text.
 * Sending them (outbox, confirms, retries) is reporter.c's part.
 */
#ifndef WARREN_WORKER_REPORT_MSG_H
#define WARREN_WORKER_REPORT_MSG_H

#include <json-c/json.h>
#include "warren/common.h"
#include "warren/envelope.h"

/* headers.source of every envelope a worker sends. */
#define REPORT_MSG_SOURCE "worker"
/* A result nested deeper than this would push the completion past the envelope decoder's
 * nesting limit: the envelope and its payload take two of its ENVELOPE_MAX_DEPTH levels
 * (tests/unit/test_worker_report_msg.c checks the limit is exact). */
#define REPORT_MSG_RESULT_MAX_DEPTH (ENVELOPE_MAX_DEPTH - 2)

typedef struct report_msg_running {
    const char *worker_id;
    int64_t execution_id;
    int attempt;
    const char *started_at;
    const char *trace_id;    /* from the dispatch; NULL or "" for none */
    const char *incarnation; /* the worker process's (INCARNATION_LEN hex) */
    int timeout_s;           /* the timeout applied to the handler; 0: none */
} report_msg_running_t;

typedef struct report_msg_completion {
    const char *worker_id;
    int64_t execution_id;
    int attempt;
    const char *status;      /* completed | failed | timeout | cancelled */
    const char *result_json; /* strict JSON text from the runner, embedded as is; NULL: null */
    int exit_code;
    int signal;
    const char *error; /* NULL: null */
    const char *stderr_tail;
    bool truncated;
    const char *started_at; /* "": never started (cancelled while held), sent as null */
    const char *ended_at;
    int64_t duration_ms;
    const char *trace_id;
    const char *incarnation;
    bool repeat; /* sent again for a repeated dispatch of work that finished here */
} report_msg_completion_t;

typedef struct report_msg_heartbeat {
    const char *worker_id;
    const char *status;        /* online | stopping */
    json_object *capabilities; /* array of action refs; borrowed */
    int capacity;
    int running;
    int heartbeat_interval_s;
    const char *host, *version, *started_at;
    const char *incarnation;
} report_msg_heartbeat_t;

/* How the completion's result had to be changed to fit an envelope. */
typedef enum {
    REPORT_MSG_RESULT_KEPT = 0,
    REPORT_MSG_RESULT_TOO_DEEP,  /* sent as {"output": "<the JSON text>"} */
    REPORT_MSG_RESULT_TOO_LARGE, /* sent as {"output": "<a prefix>", "truncated": true} */
} report_msg_fate_t;

/* Each returns a malloc'd envelope body (caller frees) with its length in *len; NULL on OOM.
 * message_id names the message (the same on every publish try). */
char *report_msg_running(const report_msg_running_t *r, const char *message_id, size_t *len);
char *report_msg_completion(const report_msg_completion_t *c, const char *message_id, size_t *len,
                            report_msg_fate_t *fate);
char *report_msg_heartbeat(const report_msg_heartbeat_t *h, const char *message_id, size_t *len);

/* A copy of c and every string it points at, in one malloc'd block that free() releases (the
 * worker keeps it to send the same completion again); *bytes gets the block's size. NULL on
 * OOM. */
report_msg_completion_t *report_msg_completion_keep(const report_msg_completion_t *c,
                                                    size_t *bytes);

/* Deepest nesting of arrays and objects in JSON text (0 for a scalar). */
int report_msg_json_depth(const char *text);
/* Longest prefix of text (cut at a UTF-8 character boundary) whose JSON string escape takes at
 * most budget bytes. */
size_t report_msg_prefix_fitting(const char *text, size_t len, size_t budget);

#endif
