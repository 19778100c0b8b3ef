/* bytea input text, and array literals for batched statements. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/pgtext.h"

char *pgtext_bytea_hex(const void *bytes, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = bytes;
    char *out = malloc(2 * len + 3);
    if (!out)
        return NULL;
    out[0] = '\\';
    out[1] = 'x';
    for (size_t i = 0; i < len; i++) {
        out[2 + 2 * i] = hex[s[i] >> 4];
        out[3 + 2 * i] = hex[s[i] & 15];
    }
    out[2 + 2 * len] = '\0';
    return out;
}

void pgarr_init(pgarr_t *a)
{
    memset(a, 0, sizeof *a);
}

void pgarr_free(pgarr_t *a)
{
    free(a->buf);
    memset(a, 0, sizeof *a);
}

/* Room for `more` bytes plus the opening "{", the closing "}" and NUL. */
static bool reserve(pgarr_t *a, size_t more)
{
    if (a->oom)
        return false;
    if (a->len + more + 3 <= a->cap)
        return true;
    size_t cap = a->cap ? a->cap : 64;
    while (cap < a->len + more + 3)
        cap *= 2;
    char *p = realloc(a->buf, cap);
    if (!p) {
        a->oom = true;
        return false;
    }
    a->buf = p;
    a->cap = cap;
    if (a->len == 0)
        a->buf[a->len++] = '{';
    return true;
}

static void separator(pgarr_t *a)
{
    if (a->n++ > 0)
        a->buf[a->len++] = ',';
}

void pgarr_add(pgarr_t *a, const char *s)
{
    /* Worst case every character is escaped, plus quotes and a comma. */
    size_t n = s ? strlen(s) : 0;
    if (!reserve(a, 2 * n + 8))
        return;
    separator(a);
    if (!s) {
        memcpy(a->buf + a->len, "NULL", 4);
        a->len += 4;
        return;
    }
    a->buf[a->len++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            a->buf[a->len++] = '\\';
        a->buf[a->len++] = s[i];
    }
    a->buf[a->len++] = '"';
}

void pgarr_add_int(pgarr_t *a, int64_t v)
{
    if (!reserve(a, 24))
        return;
    separator(a);
    a->len += (size_t)snprintf(a->buf + a->len, 24, "%" PRId64, v);
}

void pgarr_add_int_or_null(pgarr_t *a, bool present, int64_t v)
{
    if (present)
        pgarr_add_int(a, v);
    else
        pgarr_add(a, NULL);
}

const char *pgarr_text(pgarr_t *a)
{
    if (!reserve(a, 0))
        return NULL;
    a->buf[a->len] = '}';
    a->buf[a->len + 1] = '\0';
    return a->buf;
}
