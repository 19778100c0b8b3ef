/*
 * Reading fields of worker message payloads (status changes, completions, heartbeats) with
 * errors that name the field. Each returns 1 when the field is present and valid, 0 when it
 * is absent (or null), -1 when it is present but wrong (err says why).
 */
#ifndef WARREN_EXECUTOR_MSGFIELDS_H
#define WARREN_EXECUTOR_MSGFIELDS_H

#include <json-c/json.h>
#include "warren/common.h"

/* An integer in [min, max]. */
int mf_int(json_object *obj, const char *key, int64_t min, int64_t max, int64_t *out, char *err,
           size_t errlen) WARN_UNUSED;
/* A string of at most max_len bytes without NUL or control characters; *out borrows from obj. */
int mf_string(json_object *obj, const char *key, size_t max_len, const char **out, char *err,
              size_t errlen) WARN_UNUSED;
/* execution_id: a positive integer, or the same as a string of digits ("42"). */
int mf_execution_id(json_object *obj, int64_t *out, char *err, size_t errlen) WARN_UNUSED;
/* True when some string anywhere in v holds a NUL (jsonb cannot store "\u0000"). */
bool mf_has_nul(json_object *v);

#endif
