/* Bounded capture of a handler's output and the shaping of it into a JSON result. */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
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

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 when it is invalid. */
static size_t utf8_valid_seq(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char lead = s[0];
    if (lead < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if (lead >= 0xC2 && lead <= 0xDF) {
        len = 2, cp = lead & 0x1F, min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        len = 3, cp = lead & 0x0F, min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        len = 4, cp = lead & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are invalid. */
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* True when s[0..n) is the start of a multi-byte sequence that needed more bytes. */
static bool cut_sequence(const unsigned char *s, size_t n)
{
    size_t want = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (want == 0 || n >= want)
        return false;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return false;
    return true;
}

/*
 * Valid UTF-8 copy of p[0..len). cut_front: the bytes were cut before p, so continuation bytes
 * at the start are the rest of a lost character. cut_back: likewise at the end.
 */
static char *sanitize(const char *p, size_t len, bool cut_front, bool cut_back)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (cut_front && i < len && i < 3 && (s[i] & 0xC0) == 0x80)
        i++;
    char *out = malloc(len * 3 + 1); /* each byte becomes at most one U+FFFD */
    if (!out)
        return NULL;
    size_t o = 0;
    while (i < len) {
        size_t n = utf8_valid_seq(s + i, len - i);
        if (n > 0 && s[i] != '\0') {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
            continue;
        }
        if (cut_back && cut_sequence(s + i, len - i))
            break;
        memcpy(out + o, replacement, 3);
        o += 3;
        i++;
    }
    out[o] = '\0';
    return out;
}

char *capture_text(const capture_t *c)
{
    bool cut = c->truncated;
    return sanitize(c->buf ? c->buf : "", c->len, cut && c->keep_tail, cut && !c->keep_tail);
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

/* The four hex digits of a \u escape; -1 when they are not there. */
static long scan_hex4(jscan_t *s)
{
    if (s->end - s->p < 4)
        return -1;
    char hex[5] = {0};
    memcpy(hex, s->p, 4);
    char *stop;
    long v = strtol(hex, &stop, 16);
    if (*stop || hex[0] == '+' || hex[0] == '-' || hex[0] == ' ')
        return -1;
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
        size_t n = utf8_valid_seq(s->p, (size_t)(s->end - s->p));
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
    char *clean = sanitize(text, len, false, truncated);
    json_object *o = json_object_new_object();
    char *out = NULL;
    if (clean && o) {
        json_object_object_add(o, "output", json_object_new_string(clean));
        if (truncated)
            json_object_object_add(o, "truncated", json_object_new_boolean(1));
        const char *s = json_object_to_json_string_ext(
            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
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
