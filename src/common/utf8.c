/* Strict UTF-8 validation (RFC 3629), so malformed text is refused where it enters. */
#include "warren/utf8.h"

/* Length of the sequence led by byte b and the allowed range of its second byte;
 * the narrowed ranges are what exclude overlong forms, surrogates and > U+10FFFF. */
static int seq_shape(unsigned char b, unsigned char *lo, unsigned char *hi)
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

bool utf8_valid(const void *s, size_t len, size_t *bad_offset)
{
    const unsigned char *p = s;
    size_t i = 0;
    while (i < len) {
        unsigned char lo, hi;
        int n = seq_shape(p[i], &lo, &hi);
        bool ok = n > 0 && (size_t)n <= len - i;
        for (int k = 1; ok && k < n; k++) {
            unsigned char c = p[i + (size_t)k];
            ok = k == 1 ? c >= lo && c <= hi : c >= 0x80 && c <= 0xBF;
        }
        if (!ok) {
            if (bad_offset)
                *bad_offset = i;
            return false;
        }
        i += (size_t)n;
    }
    return true;
}
