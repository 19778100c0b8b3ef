/* Bounded capture of a handler's output and the shaping of it into a JSON result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "warren/utf8.h"
#include "worker/capture.h"

#define CAPTURE_MIN_ALLOC 4096
#define RESULT_MAX_DEPTH 64

/*
 * The numbers PostgreSQL's numeric type, in which jsonb keeps every JSON number, can hold (its
 * numeric.c: set_var_from_str and make_result; checked against PostgreSQL 15): a display scale
 * (digits after the point as written, minus the exponent) of at most 16383, a weight (the
 * position of the first significant base-10000 digit) that fits 16 bits, and an exponent below
 * INT_MAX / 2 even when the value is zero.
 */
#define PG_NUMERIC_DSCALE_MAX 16383
#define PG_NUMERIC_WEIGHT_MAX 32767
#define PG_NUMERIC_WEIGHT_MIN (-32768)
#define PG_NUMERIC_EXPONENT_LIMIT 1073741823
#define PG_NUMERIC_DEC_DIGITS 4 /* decimal digits per base-10000 digit */
#define UNSTORABLE_NUMBER "number out of range"

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
    bool unstorable; /* a number jsonb cannot hold: valid JSON, but not a result */
} jscan_t;

static bool scan_value(jscan_t *s);
static bool scan_number_syntax(jscan_t *s);

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

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Floor division by the digits of one base-10000 digit, for negative positions too. */
static int64_t numeric_weight(int64_t decimal_position)
{
    return decimal_position >= 0 ? decimal_position / PG_NUMERIC_DEC_DIGITS
                                 : -((-decimal_position - 1) / PG_NUMERIC_DEC_DIGITS + 1);
}

bool capture_number_storable(const char *num, size_t len)
{
    size_t i = 0;
    int64_t int_digits = 0, frac_digits = 0, exponent = 0, first = -1; /* first: 10^first */
    if (i < len && num[i] == '-')
        i++;
    for (; i < len && is_digit(num[i]); i++, int_digits++)
        if (first < 0 && num[i] != '0')
            first = int_digits; /* an index for now: the position once the length is known */
    if (first >= 0)
        first = int_digits - 1 - first;
    else
        first = INT64_MIN;
    if (i < len && num[i] == '.')
        for (i++; i < len && is_digit(num[i]); i++) {
            frac_digits++;
            if (first == INT64_MIN && num[i] != '0')
                first = -frac_digits;
        }
    if (i < len && (num[i] == 'e' || num[i] == 'E')) {
        bool negative = ++i < len && num[i] == '-';
        if (i < len && (num[i] == '-' || num[i] == '+'))
            i++;
        for (; i < len && is_digit(num[i]); i++)
            if (exponent < PG_NUMERIC_EXPONENT_LIMIT) /* saturates: more is refused anyway */
                exponent = exponent * 10 + (num[i] - '0');
        if (negative)
            exponent = -exponent;
    }
    if (exponent >= PG_NUMERIC_EXPONENT_LIMIT || exponent <= -PG_NUMERIC_EXPONENT_LIMIT ||
        frac_digits - exponent > PG_NUMERIC_DSCALE_MAX)
        return false;
    if (first == INT64_MIN) /* zero: no weight */
        return true;
    int64_t weight = numeric_weight(first + exponent);
    return weight >= PG_NUMERIC_WEIGHT_MIN && weight <= PG_NUMERIC_WEIGHT_MAX;
}

static bool scan_number(jscan_t *s)
{
    const unsigned char *start = s->p;
    if (!scan_number_syntax(s))
        return false;
    if (!capture_number_storable((const char *)start, (size_t)(s->p - start)))
        s->unstorable = true;
    return true;
}

static bool scan_number_syntax(jscan_t *s)
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

/* True when text[0..len) is exactly one JSON value (surrounding whitespace allowed);
 * *unstorable tells whether it holds a number jsonb cannot store. */
static bool is_one_json_value(const char *text, size_t len, bool *unstorable)
{
    jscan_t s = {(const unsigned char *)text, (const unsigned char *)text + len, 0, false};
    skip_ws(&s);
    if (!scan_value(&s))
        return false;
    skip_ws(&s);
    *unstorable = s.unstorable;
    return s.p == s.end;
}

/* {"output": text} plus "truncated": true when it was cut, or "unstorable": why when it is
 * JSON the executor could not store. */
static char *wrap_text(const char *text, size_t len, bool truncated, const char *unstorable)
{
    char *clean = utf8_clean(text, truncated ? len - utf8_partial_tail(text, len) : len);
    json_object *o = json_object_new_object();
    char *out = NULL;
    if (clean && o) {
        json_object_object_add(o, "output", json_object_new_string(clean));
        if (truncated)
            json_object_object_add(o, "truncated", json_object_new_boolean(1));
        if (unstorable)
            json_object_object_add(o, "unstorable", json_object_new_string(unstorable));
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        out = s ? strdup(s) : NULL;
    }
    json_object_put(o);
    free(clean);
    return out;
}

char *capture_result_json(const char *text, size_t len, bool truncated, bool empty_is_object,
                          bool *oom)
{
    bool unstorable = false;
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
    } else if (truncated) {
        out = wrap_text(text, len, true, NULL);
    } else if (!is_one_json_value(text, len, &unstorable)) {
        out = wrap_text(text, len, false, NULL);
    } else {
        out = unstorable ? wrap_text(text, len, false, UNSTORABLE_NUMBER) : strndup(text, len);
    }
    *oom = out == NULL;
    return out;
}
