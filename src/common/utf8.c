/* UTF-8 (RFC 3629): strict validation, cleaning, and cuts that never split a character. */
#include <stdlib.h>
#include <string.h>
#include "warren/utf8.h"

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

static bool is_continuation(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

/* Length of the sequence led by byte b (0: b cannot lead one) and the allowed range of its
 * second byte; the narrowed ranges are what exclude overlong forms, surrogates and
 * > U+10FFFF. */
static size_t seq_shape(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0)
            *lo = 0xA0;
        else if (b == 0xED)
            *hi = 0x9F;
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0)
            *lo = 0x90;
        else if (b == 0xF4)
            *hi = 0x8F;
        return 4;
    }
    return 0;
}

/* How many of the bytes p[0..n) are a well-formed start of the sequence p[0] leads (n stops
 * at the sequence's length). */
static size_t good_prefix(const unsigned char *p, size_t n, size_t *want)
{
    unsigned char lo, hi;
    *want = seq_shape(p[0], &lo, &hi);
    if (*want == 0)
        return 0;
    size_t k = 1;
    for (; k < *want && k < n; k++)
        if (k == 1 ? p[k] < lo || p[k] > hi : !is_continuation(p[k]))
            break;
    return k;
}

size_t utf8_char_len(const void *s, size_t n)
{
    size_t want;
    if (n == 0)
        return 0;
    return good_prefix(s, n, &want) == want ? want : 0;
}

bool utf8_valid(const void *s, size_t len, size_t *bad_offset)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len(p + i, len - i);
        if (n == 0) {
            if (bad_offset)
                *bad_offset = i;
            return false;
        }
        i += n;
    }
    return true;
}

bool utf8_is_text(const void *s, size_t len)
{
    return memchr(s, '\0', len) == NULL && utf8_valid(s, len, NULL);
}

char *utf8_clean(const void *s, size_t len)
{
    const unsigned char *p = s;
    char *out = malloc(len * 3 + 1); /* each byte becomes at most one U+FFFD */
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len(p + i, len - i);
        if (n == 0 || p[i] == '\0') {
            memcpy(out + o, replacement, 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
        }
    }
    out[o] = '\0';
    return out;
}

size_t utf8_partial_tail(const void *s, size_t len)
{
    const unsigned char *p = s;
    /* Find the last lead byte among the final three; it must want more bytes than remain. */
    for (size_t k = 1; k <= 3 && k <= len; k++) {
        const unsigned char *lead = p + len - k;
        if (is_continuation(*lead))
            continue;
        size_t want;
        return good_prefix(lead, k, &want) == k && want > k ? k : 0;
    }
    return 0;
}

size_t utf8_partial_head(const void *s, size_t len)
{
    const unsigned char *p = s;
    size_t i = 0;
    while (i < len && i < 3 && is_continuation(p[i]))
        i++;
    return i;
}

size_t utf8_cut(const void *s, size_t len, size_t max)
{
    const unsigned char *p = s;
    if (len <= max)
        return len;
    /* The byte after the cut tells whether the cut falls inside a character. */
    if (!is_continuation(p[max]))
        return max;
    return max - utf8_partial_tail(p, max);
}

int utf8_prec(const char *s, size_t max)
{
    return (int)utf8_cut(s, strnlen(s, max + 1), max);
}
