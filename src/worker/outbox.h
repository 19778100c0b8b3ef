/*
 * The worker's outbox: status and completion messages waiting for a confirmed publish, in the
 * order they were produced (an execution's running status always goes out before its
 * completion). A failed publish keeps its message at the head and waits with exponential backoff
 * before the next try. Pure: the clock and the random number are passed in.
 */
#ifndef WARREN_WORKER_OUTBOX_H
#define WARREN_WORKER_OUTBOX_H

#include "warren/backoff.h"
#include "warren/common.h"
#include "warren/envelope.h"

typedef enum { OUTBOX_RUNNING = 0, OUTBOX_COMPLETED } outbox_kind_t;

typedef struct outbox_msg {
    struct outbox_msg *next;
    outbox_kind_t kind; /* what its confirmation settles */
    int64_t execution_id;
    int attempt;
    msg_type_t type;
    char message_id[40]; /* the same on every try, so the executor can tell a repeat */
    char routing_key[160];
    char *body; /* owned */
    size_t body_len;
    int tries;         /* failed publishes so far */
    int64_t queued_ms; /* monotonic, when it was pushed */
} outbox_msg_t;

typedef struct outbox {
    outbox_msg_t *head, *tail;
    size_t len, cap;
    backoff_t backoff;
    size_t inflight;     /* messages from the head being published now: never taken */
    bool failing;        /* the last publish failed and none succeeded since */
    int64_t retry_at_ms; /* while failing: no publish before this (monotonic) */
} outbox_t;

/* An outbox of at most cap messages, retrying after base_ms doubling up to max_ms. */
void outbox_init(outbox_t *o, size_t cap, int64_t base_ms, int64_t max_ms);
/* Frees every queued message. */
void outbox_free(outbox_t *o);

/* A message that takes ownership of body (malloc'd), also when it returns NULL for OOM. Freed
 * by outbox_msg_free(). */
outbox_msg_t *outbox_msg_new(outbox_kind_t kind, int64_t execution_id, int attempt, msg_type_t type,
                             const char *message_id, const char *routing_key, char *body,
                             size_t body_len);
void outbox_msg_free(outbox_msg_t *m);

/* Append m, which the outbox then owns. -1 when full: the caller keeps m. */
int outbox_push(outbox_t *o, outbox_msg_t *m, int64_t now_ms) WARN_UNUSED;
/* The message to publish now: the head, unless empty or waiting for the retry time. */
outbox_msg_t *outbox_due(const outbox_t *o, int64_t now_ms);
/* Unlink and return the OUTBOX_RUNNING message of (execution_id, attempt) whose publish never
 * failed at the head and is not in flight, or NULL (confirmed already, retrying, or being
 * published now). It may still have gone out in a
 * batch behind a failed message; dropping it is harmless, since the executor accepts a
 * completion with or without a running status before it. The caller frees it. */
outbox_msg_t *outbox_take_unsent_running(outbox_t *o, int64_t execution_id, int attempt);
/* The head was confirmed: unlink and return it (the caller frees it) and end any backoff. */
outbox_msg_t *outbox_pop(outbox_t *o);
/*
 * Publishing the head failed: count the try and wait before the next. Returns the delay in ms,
 * never less than min_ms (e.g. the time until an open circuit breaker admits a probe).
 */
int64_t outbox_failed(outbox_t *o, int64_t now_ms, int64_t min_ms, double unit_random);
/* Nothing was tried (an open circuit breaker refused at once): wait delay_ms without counting
 * a try or advancing the backoff. */
void outbox_defer(outbox_t *o, int64_t now_ms, int64_t delay_ms);
/* Something suggests the broker is back (a reconnect): try the head now, keeping the backoff
 * step for the case it fails again. */
void outbox_retry_now(outbox_t *o);

#endif
