/* Bounded capture of a handler's output and the shaping of it into a JSON result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "warren/utf8.h"
#include "worker/capture.h"

#define CAPTURE_MIN_ALLOC 4096
#define RESULT_MAX_DEPTH 64

void capture_init(capture_t *c, size_t cap, bool keep_tail)
{
    memset(c, 0, sizeof *c);
    c->cap = cap;
    c->keep_tail = keep_tail;
}

void capture_reset(capture_t *c)
{
    free(c->buf);
    capture_init(c, c->cap, c->keep_tail);
}

/* Grow to hold need bytes; the allocation doubles so appends stay amortised O(1). */
static int reserve(capture_t *c, size_t need)
{
    if (need <= c->alloc)
        return 0;
    size_t n = c->alloc ? c->alloc * 2 : CAPTURE_MIN_ALLOC;
    if (n < need)
        n = need;
    if (n > c->cap)
        n = c->cap;
    char *p = realloc(c->buf, n);
    if (!p)
        return -1;
    c->buf = p;
    c->alloc = n;
    return 0;
}

/* Append n bytes that fit under the cap. */
static int put(capture_t *c, const char *data, size_t n)
{
    if (n == 0)
        return 0;
    if (reserve(c, c->len + n) < 0) {
        c->truncated = true;
        return -1;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    return 0;
}

static int head_append(capture_t *c, const char *data, size_t n)
{
    size_t room = c->cap - c->len;
    size_t take = n < room ? n : room;
    if (take < n)
        c->truncated = true;
    return put(c, data, take);
}

static int tail_append(capture_t *c, const char *data, size_t n)
{
    if (n == 0)
        return 0;
    if (n >= c->cap) {
        /* The new bytes alone fill the tail: everything older goes. */
        c->truncated = c->truncated || n > c->cap || c->len > 0;
        data += n - c->cap;
        n = c->cap;
        c->len = 0;
    } else if (c->len + n > c->cap) {
        size_t drop = c->len + n - c->cap;
        memmove(c->buf, c->buf + drop, c->len - drop);
        c->len -= drop;
        c->truncated = true;
    }
    return put(c, data, n);
}

int capture_append(capture_t *c, const void *data, size_t n)
{
    return c->keep_tail ? tail_append(c, data, n) : head_append(c, data, n);
}

/* Where the capture was cut, the bytes of a character only partly kept are dropped, not
 * replaced: the character was fine, the cut is ours. */
char *capture_text(const capture_t *c)
{
    const char *p = c->buf ? c->buf : "";
    size_t from = 0, to = c->len;
    if (c->truncated && c->keep_tail)
        from = utf8_partial_head(p, to);
    else if (c->truncated)
        to -= utf8_partial_tail(p, to);
    return utf8_clean(p + from, to - from);
}

void capture_error_text(const char *text, char *dst, size_t cap)
{
    size_t n = strlen(text);
    char *clean = utf8_clean(text, n - utf8_partial_tail(text, n));
    const char *t = clean ? clean : "(error text lost: out of memory)";
    snprintf(dst, cap, "%.*s", utf8_prec(t, cap - 1), t);
    free(clean);
}

static bool json_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/*
 * A strict RFC 8259 check. json-c's parser, even in strict mode, takes 'single quotes', NaN,
 * "1." and raw tabs in strings, none of which PostgreSQL's jsonb stores. Also refused, for the
 * same reason: \u0000 and unpaired UTF-16 surrogate escapes.
 */
typedef struct jscan {
    const unsigned char *p, *end;
    int depth;
} jscan_t;

static bool scan_value(jscan_t *s);

static void skip_ws(jscan_t *s)
{
    while (s->p < s->end && json_space((char)*s->p))
        s->p++;
}

static bool scan_char(jscan_t *s, unsigned char c)
{
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

static bool scan_literal(jscan_t *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
        return false;
    s->p += n;
    return true;
}

static size_t scan_digits(jscan_t *s)
{
    size_t n = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++, n++;
    return n;
}

static bool scan_number(jscan_t *s)
{
    scan_char(s, '-');
    if (!scan_char(s, '0') && (s->p >= s->end || *s->p < '1' || *s->p > '9' || !scan_digits(s)))
        return false;
    if (scan_char(s, '.') && scan_digits(s) == 0)
        return false;
    if (scan_char(s, 'e') || scan_char(s, 'E')) {
        if (!scan_char(s, '+'))
            scan_char(s, '-');
        if (scan_digits(s) == 0)
            return false;
    }
    return true;
}

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20; /* lower case */
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The four hex digits of a \u escape; -1 when they are not there. Each byte is checked: strtol
 * would also take a sign or blanks, and stop at a NUL as if the digits were complete. */
static long scan_hex4(jscan_t *s)
{
    long v = 0;
    if (s->end - s->p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(s->p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    s->p += 4;
    return v;
}

static bool scan_unicode_escape(jscan_t *s)
{
    long v = scan_hex4(s);
    if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF))
        return false;
    if (v >= 0xD800 && v <= 0xDBFF) {
        if (!scan_literal(s, "\\u"))
            return false;
        long low = scan_hex4(s);
        return low >= 0xDC00 && low <= 0xDFFF;
    }
    return true;
}

static bool scan_string(jscan_t *s)
{
    if (!scan_char(s, '"'))
        return false;
    while (s->p < s->end) {
        unsigned char c = *s->p;
        if (c == '"') {
            s->p++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            s->p++;
            if (scan_char(s, 'u')) {
                if (!scan_unicode_escape(s))
                    return false;
            } else if (s->p >= s->end || !strchr("\"\\/bfnrt", *s->p) || !*s->p) {
                return false;
            } else {
                s->p++;
            }
            continue;
        }
        size_t n = utf8_char_len(s->p, (size_t)(s->end - s->p));
        if (n == 0)
            return false;
        s->p += n;
    }
    return false;
}

/* Members of an array (close ']') or an object (close '}'), after the opening bracket. */
static bool scan_members(jscan_t *s, unsigned char close)
{
    if (++s->depth > RESULT_MAX_DEPTH)
        return false;
    skip_ws(s);
    if (scan_char(s, close)) {
        s->depth--;
        return true;
    }
    do {
        skip_ws(s);
        if (close == '}') {
            if (!scan_string(s))
                return false;
            skip_ws(s);
            if (!scan_char(s, ':'))
                return false;
            skip_ws(s);
        }
        if (!scan_value(s))
            return false;
        skip_ws(s);
    } while (scan_char(s, ','));
    s->depth--;
    return scan_char(s, close);
}

static bool scan_value(jscan_t *s)
{
    if (s->p >= s->end)
        return false;
    switch (*s->p) {
    case '{': s->p++; return scan_members(s, '}');
    case '[': s->p++; return scan_members(s, ']');
    case '"': return scan_string(s);
    case 't': return scan_literal(s, "true");
    case 'f': return scan_literal(s, "false");
    case 'n': return scan_literal(s, "null");
    default: return scan_number(s);
    }
}

/* True when text[0..len) is exactly one JSON value (surrounding whitespace allowed). */
static bool is_one_json_value(const char *text, size_t len)
{
    jscan_t s = {(const unsigned char *)text, (const unsigned char *)text + len, 0};
    skip_ws(&s);
    if (!scan_value(&s))
        return false;
    skip_ws(&s);
    return s.p == s.end;
}

static char *wrap_text(const char *text, size_t len, bool truncated)
{
    char *clean = utf8_clean(text, truncated ? len - utf8_partial_tail(text, len) : len);
    json_object *o = json_object_new_object();
    char *out = NULL;
    if (clean && o) {
        json_object_object_add(o, "output", json_object_new_string(clean));
        if (truncated)
            json_object_object_add(o, "truncated", json_object_new_boolean(1));
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        out = s ? strdup(s) : NULL;
    }
    json_object_put(o);
    free(clean);
    return out;
}

/* The trimmed text itself when it is one JSON value, else NULL (also on OOM). */
static char *as_json_value(const char *text, size_t len)
{
    return is_one_json_value(text, len) ? strndup(text, len) : NULL;
}

char *capture_result_json(const char *text, size_t len, bool truncated, bool empty_is_object,
                          bool *oom)
{
    *oom = false;
    while (len > 0 && json_space(text[0]))
        text++, len--;
    while (len > 0 && json_space(text[len - 1]))
        len--;
    char *out;
    if (len == 0 && !truncated) {
        if (!empty_is_object)
            return NULL;
        out = strdup("{}");
    } else {
        out = truncated ? NULL : as_json_value(text, len);
        if (!out)
            out = wrap_text(text, len, truncated);
    }
    *oom = out == NULL;
    return out;
}
