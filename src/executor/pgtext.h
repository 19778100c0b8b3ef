/*
 * Text for PostgreSQL parameters: bytea input, and array literals so one statement can carry a
 * whole batch (`unnest($1::text[], ...)`). Text must be clean first (warren/utf8.h).
 */
#ifndef WARREN_EXECUTOR_PGTEXT_H
#define WARREN_EXECUTOR_PGTEXT_H

#include "warren/common.h"

/* bytea input text "\x0a1b..." for bytes. malloc'd; NULL on OOM. */
char *pgtext_bytea_hex(const void *bytes, size_t len);

/* An array literal being built ("{"a","b",NULL}"). Free with pgarr_free(). */
typedef struct pgarr {
    char *buf;
    size_t len, cap;
    size_t n; /* elements added */
    bool oom;
} pgarr_t;

void pgarr_init(pgarr_t *a);
void pgarr_free(pgarr_t *a);
/* Add a text element (NULL: an SQL NULL). The text must already be clean. */
void pgarr_add(pgarr_t *a, const char *s);
void pgarr_add_int(pgarr_t *a, int64_t v);
/* Add NULL when `present` is false, else the integer. */
void pgarr_add_int_or_null(pgarr_t *a, bool present, int64_t v);
/* The finished literal, valid until the next add or free; NULL after an allocation failure. */
const char *pgarr_text(pgarr_t *a);

#endif
