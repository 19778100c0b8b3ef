/* The configuration table: one row per key. Internal to the config module and its tests. */
#ifndef WARREN_CONFIG_TABLE_H
#define WARREN_CONFIG_TABLE_H

#include <stddef.h>
#include "warren/config.h"

/* CT_ACTIONS: per-action settings (the key `actions`, warren/retry.h), kept as their text form
 * "ACTION: field=value ...; ..." like a string (check validates it); in the file also a list of
 * groups { action = "NAME"; retry = { field = value; ... }; }, since libconfig names cannot hold
 * the dots of action names. */
typedef enum { CT_STRING = 0, CT_INT, CT_BOOL, CT_ENUM, CT_ACTIONS } cfg_type_t;

typedef struct cfg_key {
    const char *path; /* dotted key path as written in the file */
    cfg_type_t type;
    size_t offset;              /* into warren_config_t */
    size_t size;                /* bytes of the field: CT_INT is int or int64_t */
    const char *def;            /* default as text (parsed like an environment value) */
    long long min, max;         /* bounds for CT_INT */
    const char *const *choices; /* NULL-terminated, for CT_ENUM (stored as the index) */
    bool secret;                /* masked by `config check` */
    bool reloadable;            /* taken by a running daemon on SIGHUP (cfg_reload) */
    const char *help;
    /* Extra check of a string value (NULL: none); -1 with the problem in why. */
    int (*check)(const char *value, char *why, size_t whylen);
    bool opaque; /* a secret masked whole, never parsed as a URL */
} cfg_key_t;

extern const cfg_key_t cfg_table[];
extern const size_t cfg_table_len;

/* Strings and CT_ACTIONS: the field is a char * the configuration owns. */
#define CT_IS_TEXT(t) ((t) == CT_STRING || (t) == CT_ACTIONS)

/* Environment variable for a key: WARREN__ + path upper-cased, dots as "__". */
void cfg_env_name(const char *path, char *buf, size_t len);

#endif
