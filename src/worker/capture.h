/* Bounded capture of a handler's output and the shaping of it into a JSON result. */
#ifndef WARREN_WORKER_CAPTURE_H
#define WARREN_WORKER_CAPTURE_H

#include "warren/common.h"

/*
 * A byte buffer that never holds more than cap bytes. A head capture keeps the first cap bytes
 * (stdout); a tail capture keeps the last cap bytes (stderr). Bytes beyond the cap are dropped
 * and `truncated` says so. Memory grows on demand up to cap.
 */
typedef struct capture {
    char *buf;
    size_t len;
    size_t cap;
    size_t alloc;
    bool keep_tail;
    bool truncated;
} capture_t;

/* The capture owns buf; release it with capture_reset(). */
void capture_init(capture_t *c, size_t cap, bool keep_tail);
void capture_reset(capture_t *c);
/* Returns -1 only when memory runs out (the bytes are then dropped and truncated is set). */
int capture_append(capture_t *c, const void *data, size_t n) WARN_UNUSED;

/*
 * The captured bytes as a NUL-terminated string of valid UTF-8: invalid sequences and NUL bytes
 * become U+FFFD; a sequence cut by truncation is dropped. Caller frees with free(); NULL on OOM.
 */
char *capture_text(const capture_t *c);

/*
 * A handler's own error text (an in-process module's out->error) into dst[cap] as valid UTF-8:
 * invalid bytes become U+FFFD, a character the module's snprintf cut short is dropped, and the
 * text is cut to fit on a character boundary. It travels in a JSON report, which must be UTF-8.
 */
void capture_error_text(const char *text, char *dst, size_t cap);

/*
 * True when the JSON number num[0..len) (RFC 8259 syntax, already checked) is one PostgreSQL
 * jsonb can store: at most 16383 digits of scale (digits after the point as written, less the
 * exponent: 1e-16383 fits, 1e-16384 and 0.10e-16382 do not), a magnitude below 10^131072, and
 * an exponent below 1073741823 even for zero. A completion holding any other number could never
 * be stored, and its execution would never settle.
 */
bool capture_number_storable(const char *num, size_t len);

/*
 * The JSON result for output text of len bytes: the text itself (trimmed) when it is exactly
 * one JSON value by RFC 8259, valid UTF-8, at most 64 levels deep and storable in PostgreSQL
 * jsonb (no \u0000, no lone surrogates, every number within capture_number_storable());
 * otherwise {"output": "<text>"}, plus "truncated": true when the output was cut, or
 * "unstorable": "number out of range" when it is JSON whose number jsonb refuses. Truncated
 * output is never parsed. Empty output gives "{}" when empty_is_object, else NULL. The caller
 * frees it with free(); *oom is set when NULL came from a failed allocation.
 */
char *capture_result_json(const char *text, size_t len, bool truncated, bool empty_is_object,
                          bool *oom);

#endif
