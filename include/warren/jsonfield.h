/*
 * Reading the fields of JSON messages (envelopes, dispatch payloads, worker reports and
 * heartbeats) with errors that name the field by its path in the message:
 *   field 'payload.attempt' is 0, expected 1..2147483647
 *
 * A reader names the object whose members are read, its path, and where errors go. Every
 * reading function returns 1 when the field is present and valid, 0 when it is absent (or
 * null) and optional, and -1 when it is wrong or a required field is missing, with the reason
 * in err. Nothing is written to an out parameter unless the field is present and valid.
 */
#ifndef WARREN_JSONFIELD_H
#define WARREN_JSONFIELD_H

#include <json-c/json.h>
#include "warren/common.h"

typedef struct jf {
    json_object *obj; /* the object read; anything else reads as having no members */
    const char *path; /* its path in the message ("payload", "headers"); NULL at the top */
    char *err;
    size_t errlen;
} jf_t;

/* Any value. */
int jf_value(const jf_t *r, const char *key, bool required, json_object **out) WARN_UNUSED;
/* An object (borrowed from r->obj). */
int jf_object(const jf_t *r, const char *key, bool required, json_object **out) WARN_UNUSED;
/* An integer in [min, max]. json-c clamps integers beyond 64 bits to the extremes, which every
 * range used here excludes. */
int jf_int(const jf_t *r, const char *key, bool required, int64_t min, int64_t max,
           int64_t *out) WARN_UNUSED;
/* A string that can be a name, an id or a header: at most max_len bytes, no NUL, no control
 * characters; a required one is not empty. *out borrows from r->obj. (json-c decodes escapes to
 * UTF-8, lone surrogates included, so a string of a body that is valid UTF-8 is valid UTF-8.) */
int jf_string(const jf_t *r, const char *key, bool required, size_t max_len,
              const char **out) WARN_UNUSED;
/* jf_string into dst[cap] (at most cap - 1 bytes); dst is "" when the field is absent. */
int jf_string_copy(const jf_t *r, const char *key, bool required, char *dst,
                   size_t cap) WARN_UNUSED;
/* Element i of the array field key, read as jf_string reads a required string; its errors
 * name it "key[i]". */
int jf_string_at(const jf_t *r, const char *key, size_t i, size_t max_len,
                 const char **out) WARN_UNUSED;
/* An array of at most max_items elements (borrowed). */
int jf_array(const jf_t *r, const char *key, bool required, size_t max_items,
             json_object **out) WARN_UNUSED;
/* Free text of any length (an error message, for one): a string, NUL and control characters
 * allowed; *out and *len borrow from r->obj. The caller cleans and cuts it (warren/utf8.h). */
int jf_text(const jf_t *r, const char *key, bool required, const char **out,
            size_t *len) WARN_UNUSED;
/* The "execution_id" member: a positive integer, or the same as a string of digits ("42",
 * ids_execution_id_parse) for peers that send ids as text. */
int jf_execution_id(const jf_t *r, bool required, int64_t *out) WARN_UNUSED;

/* "an integer", "a string", "null", ...: what v is, for messages. */
const char *jf_kind(json_object *v);
/* True when some string anywhere in v holds a NUL (jsonb cannot store "\u0000"). */
bool jf_has_nul(json_object *v);

#endif
