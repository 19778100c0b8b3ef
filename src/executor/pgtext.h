/*
 * Text for PostgreSQL parameters: make untrusted bytes safe for a text column, and build
 * array literals so one statement can carry a whole batch (`unnest($1::text[], ...)`).
 */
#ifndef WARREN_EXECUTOR_PGTEXT_H
#define WARREN_EXECUTOR_PGTEXT_H

#include "warren/common.h"

/*
 * Valid UTF-8 without NUL, as PostgreSQL text requires: invalid sequences and NUL bytes
 * become U+FFFD. Returns malloc'd text the caller frees; NULL on OOM.
 */
char *pgtext_clean(const void *bytes, size_t len);
/* True when bytes are valid UTF-8 without NUL (storable as text unchanged). */
bool pgtext_is_clean(const void *bytes, size_t len);
/* bytea input text "\x0a1b..." for bytes. malloc'd; NULL on OOM. */
char *pgtext_bytea_hex(const void *bytes, size_t len);

/* An array literal being built ("{"a","b",NULL}"). Free with pgarr_free(). */
typedef struct pgarr {
    char *buf;
    size_t len, cap;
    size_t n;          /* elements added */
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
