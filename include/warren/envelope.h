/*
 * The JSON message envelope shared with the existing topology:
 * {message_id, correlation_id, message_type, version, timestamp (RFC 3339),
 *  headers {source, attempt, trace_id}, payload}. Parsing is strict and bounded.
 */
#ifndef WARREN_ENVELOPE_H
#define WARREN_ENVELOPE_H

#include <json-c/json.h>
#include "warren/common.h"
#include "warren/ids.h"
#include "warren/timestamp.h"

#define ENVELOPE_MAX_BYTES (1024 * 1024)
#define ENVELOPE_ID_MAX 128
/* Nesting limit: values sit at most ENVELOPE_MAX_DEPTH - 1 containers deep (the envelope
 * is the first container, its payload the second). */
#define ENVELOPE_MAX_DEPTH 32
#define ENVELOPE_VERSION 1

typedef enum {
    MSG_UNKNOWN = 0,
    MSG_EXECUTION_REQUESTED,        /* executor -> worker: dispatch */
    MSG_EXECUTION_STATUS_CHANGED,   /* worker -> executor: running */
    MSG_EXECUTION_COMPLETED,        /* worker -> executor: terminal result */
    MSG_WORKER_HEARTBEAT,           /* worker -> executor: announce, heartbeat, stopping */
    MSG_EXECUTION_CANCEL_REQUESTED, /* executor -> worker's control queue: stop an execution */
    MSG_EXECUTION_DEAD_LETTERED,    /* executor -> events exchange: a dead-letter record */
    MSG_EXECUTION_ENDED,            /* executor -> events exchange: a terminal transition */
} msg_type_t;

const char *msg_type_name(msg_type_t t);
msg_type_t msg_type_parse(const char *s);

typedef struct envelope {
    char message_id[ENVELOPE_ID_MAX];
    char correlation_id[ENVELOPE_ID_MAX];
    msg_type_t type;
    char type_name[64]; /* as received, also for unknown types */
    int version;
    char timestamp[TS_TEXT_MAX]; /* as received: RFC 3339 (warren/timestamp.h) */
    int64_t timestamp_us;        /* the same instant, microseconds since the epoch */
    char source[64];
    int attempt;
    char trace_id[ENVELOPE_ID_MAX];
    json_object *payload; /* owned: released by envelope_free() */
} envelope_t;

/* Build an envelope around payload (takes ownership of payload; NULL means {}). message_id
 * NULL: a new one. Caller frees the result with free(); *len gets its length. NULL on OOM,
 * for MSG_UNKNOWN, when the text would exceed ENVELOPE_MAX_BYTES (peers would refuse it), or
 * when message_id is NULL and no new one can be made (envelope_new_id). */
char *envelope_encode(msg_type_t type, const char *message_id, const char *correlation_id,
                      const char *source, int attempt, const char *trace_id, json_object *payload,
                      size_t *len);
/* Parse body of len bytes. On error returns -1 and names the field and problem in err. */
int envelope_decode(const void *body, size_t len, envelope_t *out, char *err,
                    size_t errlen) WARN_UNUSED;
void envelope_free(envelope_t *e);

/* Dispatch payload (ExecutionRequested). */
typedef struct dispatch {
    int64_t execution_id;
    char worker_id[WORKER_ID_MAX + 1];
    char action_ref[ACTION_REF_MAX + 1];
    json_object *params; /* borrowed from the envelope payload; NULL when absent */
    int attempt;         /* >= 1; 1 when absent */
    int timeout_s;       /* >= 0; 0 (absent) means the worker's default */
    /* start_deadline: no worker may start it later (RFC 3339); the executor sets it to
     * scheduled_at + executor.scheduled_timeout_s. Microseconds; 0 when absent. */
    int64_t start_deadline_us;
} dispatch_t;
/* execution_id may be a JSON integer or a string of digits (peers that send ids as text). */
int dispatch_from_payload(json_object *payload, dispatch_t *out, char *err,
                          size_t errlen) WARN_UNUSED;
/* A new object the caller owns (json_object_put); takes its own reference on d->params. */
json_object *dispatch_to_payload(const dispatch_t *d);

/* Cancel request payload (ExecutionCancelRequested). */
typedef struct cancel_request {
    int64_t execution_id;
    int attempt; /* >= 1; the attempt to stop, never another */
    char worker_id[WORKER_ID_MAX + 1];
    char requested_by[256]; /* who asked (an API key's name, "cli:<user>"); "" when absent */
} cancel_request_t;
/* execution_id may be a JSON integer or a string of digits, as in a dispatch. */
int cancel_from_payload(json_object *payload, cancel_request_t *out, char *err,
                        size_t errlen) WARN_UNUSED;
/* A new object the caller owns (json_object_put): what cancel_from_payload reads back. */
json_object *cancel_to_payload(const cancel_request_t *c);

/* A new random message id (UUID v4 text) into buf of at least 37 bytes. -1 (logged, buf "")
 * when the kernel gives no random bytes (getrandom fails: no such call, or a seccomp filter). */
int envelope_new_id(char *buf, size_t len) WARN_UNUSED;

/* A new incarnation for this worker process (ids.h: INCARNATION_LEN lowercase hex characters from
 * 16 random bytes) into buf of at least INCARNATION_LEN + 1 bytes. It is sent as the payload
 * field `incarnation` of every heartbeat, status and completion of that process, so the
 * executor can tell a restarted worker of the same name from the one before. -1 (logged, buf "")
 * when the kernel gives no random bytes, as for envelope_new_id. */
int envelope_new_incarnation(char *buf, size_t len) WARN_UNUSED;

#endif
