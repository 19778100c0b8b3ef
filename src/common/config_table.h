/* The configuration table: one row per key. Internal to the config module and its tests. */
#ifndef WARREN_CONFIG_TABLE_H
#define WARREN_CONFIG_TABLE_H

#include <stddef.h>
#include "warren/config.h"

typedef enum { CT_STRING = 0, CT_INT, CT_BOOL, CT_ENUM } cfg_type_t;

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

/* Environment variable for a key: WARREN__ + path upper-cased, dots as "__". */
void cfg_env_name(const char *path, char *buf, size_t len);

#endif
