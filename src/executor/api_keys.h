/*
 * The API's keys: named and scoped (read, submit, operate, admin), from api.keys ("NAME:SCOPE:SECRET,...", which
 * WARREN__API__KEYS can also give) and api.keys_file (one "NAME SCOPE SECRET" per line; refused
 * when group- or world-readable). A request's secret is compared with every key in constant
 * time. Secrets are never logged: errors name the key and the line, never the secret.
 */
#ifndef WARREN_EXECUTOR_API_KEYS_H
#define WARREN_EXECUTOR_API_KEYS_H

#include "warren/common.h"
#include "warren/config.h"

#define API_KEY_NAME_MAX 64
#define API_KEY_SECRET_MIN 16
#define API_KEY_SECRET_MAX 256

/*
 * Each scope includes the ones before it: read (GETs), submit (create executions), operate
 * (cancel, retry, investigate, complete, resolve or redrive one dead letter), admin (purge, bulk
 * resolve, bulk redrive tasks: what acts on many rows). "write", the scope of old keys, is read
 * as operate; the key remembers it was so named, for a deprecation warning.
 */
typedef enum {
    API_SCOPE_READ = 1,
    API_SCOPE_SUBMIT = 2,
    API_SCOPE_OPERATE = 3,
    API_SCOPE_ADMIN = 4,
} api_scope_t;

typedef struct api_key {
    char name[API_KEY_NAME_MAX + 1];
    api_scope_t scope;
    bool named_write; /* given as "write" (deprecated): operate */
    char secret[API_KEY_SECRET_MAX + 1];
} api_key_t;

typedef struct api_keys {
    api_key_t *keys;
    size_t n, cap;
} api_keys_t;

/* Zeroed keys are an empty set. Free with api_keys_free(), which also wipes the secrets. */
void api_keys_free(api_keys_t *k);
/* Add the keys of api.keys text; where names the source in errors. -1 with err. */
int api_keys_add_list(api_keys_t *k, const char *text, const char *where, char *err,
                      size_t errlen) WARN_UNUSED;
/* Add the keys of a keys file's text (lines "NAME SCOPE SECRET", blank lines and # comments). */
int api_keys_add_file_text(api_keys_t *k, const char *text, const char *file, char *err,
                           size_t errlen) WARN_UNUSED;
/* Read file (refused when group- or world-readable, or not a regular file) and add its keys. */
int api_keys_add_file(api_keys_t *k, const char *file, char *err, size_t errlen) WARN_UNUSED;
/* api.keys, then api.keys_file. */
int api_keys_load(api_keys_t *k, const warren_config_t *cfg, char *err, size_t errlen) WARN_UNUSED;
/* The key whose secret this is, NULL for none. Looks at every key, each in constant time. */
const api_key_t *api_keys_find(const api_keys_t *k, const char *secret);
const char *api_scope_name(api_scope_t s);
/* The scope a name means (write: operate, *deprecated set), 0 for none. */
api_scope_t api_scope_parse(const char *name, size_t len, bool *deprecated);

#endif
