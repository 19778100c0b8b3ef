/* Untrusted bytes made safe for PostgreSQL text, and array literals for batched statements. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/pgtext.h"
#include "warren/utf8.h"

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

bool pgtext_is_clean(const void *bytes, size_t len)
{
    return memchr(bytes, '\0', len) == NULL && utf8_valid(bytes, len, NULL);
}

/* Length of the valid UTF-8 sequence starting at s[0..len), 0 when it is not one. */
static size_t valid_prefix(const unsigned char *s, size_t len)
{
    size_t want = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
                : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (want == 0 || want > len || (want == 1 && s[0] == 0))
        return 0;
    return utf8_valid(s, want, NULL) ? want : 0;
}

char *pgtext_clean(const void *bytes, size_t len)
{
    const unsigned char *s = bytes;
    /* Every byte becomes at most one 3-byte replacement. */
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = valid_prefix(s + i, len - i);
        if (n == 0) {
            memcpy(out + o, replacement, 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        }
    }
    out[o] = '\0';
    return out;
}

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
