/*
 * The rules for names that cross module and process boundaries, in one place: worker ids (they
 * become queue names and routing keys), action refs (they name files in the handlers directory)
 * and execution ids written as text. Topology, envelope, worker, executor and CLI all use these.
 */
#ifndef WARREN_IDS_H
#define WARREN_IDS_H

#include "warren/common.h"

/* Worker ids: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}, with no ".." and no trailing "." (no empty
 * routing-key words). The workers table checks the character set too (schema 001). */
#define WORKER_ID_MAX 64
bool ids_worker_valid(const char *id);
/* The worker id rule in words, for error messages. */
#define IDS_WORKER_RULE                                                                            \
    "use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit, with no "      \
    "'..' and no trailing '.'"

/* Action refs: 1 to 255 of [A-Za-z0-9._-], not starting with '.': a ref can name a file in the
 * handlers directory and nothing outside it. executions.action_ref holds up to 255 bytes. */
#define ACTION_REF_MAX 255
bool ids_action_ref_valid(const char *ref);
#define IDS_ACTION_REF_RULE "use 1 to 255 letters, digits, '.', '_' or '-', not starting with '.'"

/* Idempotency keys of submissions (docs/api.md): 1 to 255 printable ASCII characters without
 * spaces (a UUID, a hash, "order-42:charge"); the database checks the same (schema 032). */
#define IDEMPOTENCY_KEY_MAX 255
bool ids_idempotency_key_valid(const char *key);
#define IDS_IDEMPOTENCY_KEY_RULE "use 1 to 255 printable ASCII characters, without spaces"
/* A W3C trace context header of version 00 (docs/api.md, "Trace context"):
 * 00-<32 lowercase hex, not all 0>-<16 lowercase hex, not all 0>-<2 lowercase hex>. */
#define IDS_TRACEPARENT_LEN 55
bool ids_traceparent_valid(const char *tp);
#define IDS_TRACEPARENT_RULE                                                                       \
    "a W3C traceparent of version 00: 00-<trace id, 32 lowercase hex>-<parent id, 16 lowercase "   \
    "hex>-<flags, 2 lowercase hex>, ids not all zero"

/* A worker process's incarnation (docs/worker.md): 32 lowercase hex digits (16 random bytes),
 * fixed for the life of the process and sent in its heartbeats and reports. */
#define INCARNATION_LEN 32
bool ids_incarnation_valid(const char *s);

/* An execution id written as text (peers that send ids as JSON strings): the NUL-terminated s
 * of len bytes must be 1 to 18 digits, no sign, spaces or leading zero, so an id has exactly
 * one spelling. -1 for anything else (also a NUL within len). */
int ids_execution_id_parse(const char *s, size_t len, int64_t *out) WARN_UNUSED;
/* id as text (decimal, as ids_execution_id_parse reads it back) into buf[len]; a buffer of
 * IDS_EXECUTION_ID_TEXT bytes holds any int64_t. For headers, correlation ids and log fields. */
#define IDS_EXECUTION_ID_TEXT 24
void ids_execution_id_text(int64_t id, char *buf, size_t len);

#endif
