/*
 * An incoming message on its way through a consumer: the delivery, its decoded envelope, and —
 * when it cannot be used — the dead-letter reason and what was wrong. The results, registry and
 * dead-letter handlers embed this as the first member of their per-message state.
 */
#ifndef WARREN_EXECUTOR_INMSG_H
#define WARREN_EXECUTOR_INMSG_H

#include "warren/envelope.h"
#include "warren/mq.h"

typedef struct inmsg {
    const mq_delivery_t *d;
    envelope_t env;
    bool env_ok;     /* env holds the decoded envelope */
    char reason[32]; /* set: unusable, stored as a dead letter with this reason */
    char error[ERRBUF_SIZE];
    bool has_execution_id; /* the message names this execution, usable or not */
    int64_t execution_id;
    int64_t occurrences; /* once stored: the messages its record stands for; 0: folded into
                          * another message's record (its log line is that one's) */
} inmsg_t;

/* Decode d's envelope into m. 0 when it decoded; -1 with reason parse_error otherwise, or
 * oversized when the body was over message_queue.max_body_bytes (only its prefix was read). */
int inmsg_open(inmsg_t *m, const mq_delivery_t *d) WARN_UNUSED;
/* Mark m unusable with a dead-letter reason and a printf-style explanation. Returns -1. */
int inmsg_reject(inmsg_t *m, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void inmsg_close(inmsg_t *m);
/* m->occurrences as text into buf, for a log line; returns buf. */
const char *inmsg_occurrences(const inmsg_t *m, char *buf, size_t len);

#endif
