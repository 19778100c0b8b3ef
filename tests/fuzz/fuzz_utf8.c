/*
 * The UTF-8 helpers (warren/utf8.h) against a decoder written here from RFC 3629's definition
 * (code point ranges, not byte tables). Input: one byte giving the cut length, then the text.
 * Invariants: validation agrees with the reference at every offset; cleaning gives valid text
 * and keeps valid text as it is; cuts never end inside a character and drop at most 3 bytes;
 * cutting valid text at any length and dropping the partial tail (or head) leaves valid text.
 */
#include "fuzz.h"
#include "warren/utf8.h"

/* Length of the well-formed character at s[0..n), 0 when none starts there. */
static size_t ref_char_len(const uint8_t *s, size_t n)
{
    if (n == 0)
        return 0;
    size_t len;
    uint32_t cp, min;
    if (s[0] < 0x80)
        return 1;
    else if ((s[0] & 0xE0) == 0xC0)
        len = 2, cp = s[0] & 0x1F, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0)
        len = 3, cp = s[0] & 0x0F, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0)
        len = 4, cp = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static bool ref_valid(const uint8_t *s, size_t len, size_t *bad)
{
    for (size_t i = 0; i < len;) {
        size_t n = ref_char_len(s + i, len - i);
        if (n == 0) {
            *bad = i;
            return false;
        }
        i += n;
    }
    return true;
}

static void check_cut(const uint8_t *s, size_t len, size_t max, bool valid)
{
    size_t cut = utf8_cut(s, len, max);
    if (len <= max) {
        FUZZ_CHECK(cut == len);
        return;
    }
    FUZZ_CHECK(cut <= max && cut + 3 >= max);
    if (valid)
        FUZZ_CHECK(utf8_valid(s, cut, NULL)); /* a prefix of valid text ending on a boundary */
}

/* Valid text cut at k: what is left once the partial character is dropped is valid. */
static void check_partials(const uint8_t *s, size_t len)
{
    for (size_t k = 0; k <= len; k++) {
        size_t tail = utf8_partial_tail(s, k);
        FUZZ_CHECK(tail <= 3 && tail <= k);
        FUZZ_CHECK(utf8_valid(s, k - tail, NULL));
        size_t head = utf8_partial_head(s + k, len - k);
        FUZZ_CHECK(head <= 3 && head <= len - k);
        FUZZ_CHECK(utf8_valid(s + k + head, len - k - head, NULL));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t max = data[0];
    const uint8_t *s = data + 1;
    size_t len = size - 1;

    size_t bad = SIZE_MAX, ref_bad = SIZE_MAX;
    bool valid = utf8_valid(s, len, &bad);
    FUZZ_CHECK(valid == ref_valid(s, len, &ref_bad));
    FUZZ_CHECK(valid || bad == ref_bad);
    for (size_t i = 0; i < len; i++)
        FUZZ_CHECK(utf8_char_len(s + i, len - i) == ref_char_len(s + i, len - i));
    FUZZ_CHECK(utf8_is_text(s, len) == (valid && !memchr(s, '\0', len)));

    char *clean = utf8_clean(s, len);
    FUZZ_CHECK(clean != NULL);
    size_t clen = strlen(clean);
    FUZZ_CHECK(utf8_is_text(clean, clen) && clen <= 3 * len);
    if (utf8_is_text(s, len))
        FUZZ_CHECK(clen == len && !memcmp(clean, s, len));

    check_cut(s, len, max, valid);
    int prec = utf8_prec(clean, max);
    FUZZ_CHECK(prec >= 0 && (size_t)prec <= max && (size_t)prec <= clen);
    FUZZ_CHECK(utf8_is_text(clean, (size_t)prec));
    if (valid && len <= 512) /* quadratic: every cut of the text */
        check_partials(s, len);
    free(clean);
    return 0;
}
