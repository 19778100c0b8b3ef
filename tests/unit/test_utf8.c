/* UTF-8: strict validation at the boundaries of each sequence length, cleaning, and cuts that
 * never split a character (2-, 3- and 4-byte characters cut at every byte offset). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/utf8.h"

/* U+FFFD, the replacement character, in UTF-8. */
#define FFFD "\xef\xbf\xbd"

static bool valid(const char *s)
{
    return utf8_valid(s, strlen(s), NULL);
}

static void test_accepts_boundaries(void **state)
{
    (void)state;
    assert_true(utf8_valid("", 0, NULL));
    assert_true(valid("plain ascii \x7f"));
    assert_true(valid("\xc2\x80 \xdf\xbf")); /* U+0080, U+07FF */
    assert_true(
        valid("\xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf")); /* around surrogates */
    assert_true(valid("\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf"));           /* U+10000, U+10FFFF */
    assert_true(utf8_valid("a\0b", 3, NULL)); /* NUL is the caller's concern */
    assert_false(utf8_is_text("a\0b", 3));
    assert_true(utf8_is_text("caf\xc3\xa9", 5));
}

static void test_refuses_and_reports_offset(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t at;
    } bad[] = {
        {"ab\x80", 2},                              /* stray continuation */
        {"\xc1\xbf", 0},                            /* overlong two-byte */
        {"x\xe0\x9f\xbf", 1},                       /* overlong three-byte */
        {"\xed\xa0\x80", 0},                        /* surrogate U+D800 */
        {"\xf0\x8f\xbf\xbf", 0},                    /* overlong four-byte */
        {"\xf4\x90\x80\x80", 0},                    /* U+110000 */
        {"\xf5\x80\x80\x80", 0}, {"ok\xe2\x82", 2}, /* truncated at the end */
        {"\xe2\x28\xa1", 0},                        /* bad second byte */
        {"\xf0\x90\x28\xbc", 0},                    /* bad third byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t at = 999;
        if (utf8_valid(bad[i].s, strlen(bad[i].s), &at))
            fail_msg("case %zu accepted", i);
        assert_int_equal(at, bad[i].at);
        assert_false(utf8_is_text(bad[i].s, strlen(bad[i].s)));
    }
}

static void test_char_len(void **state)
{
    (void)state;
    assert_int_equal(utf8_char_len("a", 1), 1);
    assert_int_equal(utf8_char_len("\xc3\xa9", 2), 2);
    assert_int_equal(utf8_char_len("\xe2\x82\xac", 3), 3);
    assert_int_equal(utf8_char_len("\xf0\x9f\x98\x80", 4), 4);
    assert_int_equal(utf8_char_len("\xf0\x9f\x98", 3), 0); /* cut short */
    assert_int_equal(utf8_char_len("\x80", 1), 0);
    assert_int_equal(utf8_char_len("", 0), 0);
}

static void test_clean_keeps_valid_text(void **state)
{
    (void)state;
    const char *s = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    char *c = utf8_clean(s, strlen(s));
    assert_string_equal(c, s);
    free(c);
}

static void test_clean_replaces_bad_bytes_and_nul(void **state)
{
    (void)state;
    const char in[] = {'a', '\0', 'b', (char)0xff, (char)0xc3, '(', (char)0xe2, (char)0x82};
    char *c = utf8_clean(in, sizeof in);
    /* NUL, 0xff, the lone lead byte 0xc3 and the truncated 3-byte sequence each become U+FFFD
     * (one per byte). */
    assert_string_equal(c, "a" FFFD "b" FFFD FFFD "(" FFFD FFFD);
    assert_true(utf8_is_text(c, strlen(c)));
    free(c);
    /* Overlong and surrogate encodings are not text either. */
    c = utf8_clean("\xc0\xaf|\xed\xa0\x80", 6);
    assert_string_equal(c, FFFD FFFD "|" FFFD FFFD FFFD);
    free(c);
    c = utf8_clean("", 0);
    assert_string_equal(c, "");
    free(c);
}

/* "a", é (2 bytes), € (3 bytes), 😀 (4 bytes), "z": the character boundaries. */
static const char mixed[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
static const size_t starts[] = {0, 1, 3, 6, 10, 11, 12};
#define MIXED_LEN (sizeof mixed - 1)

/* The last character boundary at or before n, and the first at or after it. */
static size_t boundary_at_or_before(size_t n)
{
    size_t b = 0;
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        if (starts[i] <= n)
            b = starts[i];
    return b;
}

static size_t boundary_at_or_after(size_t n)
{
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        if (starts[i] >= n)
            return starts[i];
    return MIXED_LEN;
}

static void test_cut_at_every_offset(void **state)
{
    (void)state;
    for (size_t max = 0; max <= MIXED_LEN + 1; max++) {
        size_t want = max >= MIXED_LEN ? MIXED_LEN : boundary_at_or_before(max);
        size_t got = utf8_cut(mixed, MIXED_LEN, max);
        if (got != want)
            fail_msg("cut to %zu bytes: got %zu, want %zu", max, got, want);
        assert_true(utf8_valid(mixed, got, NULL));
        assert_int_equal(utf8_prec(mixed, max), (int)want);
    }
}

static void test_partial_ends_at_every_offset(void **state)
{
    (void)state;
    for (size_t n = 0; n <= MIXED_LEN; n++) {
        /* The first n bytes, the rest cut off: drop the unfinished character at the end. */
        size_t tail = utf8_partial_tail(mixed, n);
        if (tail != n - boundary_at_or_before(n))
            fail_msg("first %zu bytes: %zu partial at the end", n, tail);
        assert_true(utf8_valid(mixed, n - tail, NULL));
        /* The last bytes from n on, the start cut off: skip the rest of a lost character. */
        size_t head = utf8_partial_head(mixed + n, MIXED_LEN - n);
        if (head != boundary_at_or_after(n) - n)
            fail_msg("bytes from %zu: %zu partial at the start", n, head);
        assert_true(utf8_valid(mixed + n + head, MIXED_LEN - n - head, NULL));
    }
}

static void test_cut_of_invalid_text(void **state)
{
    (void)state;
    /* Bytes that cannot start a character are not mistaken for one cut short. */
    assert_int_equal(utf8_partial_tail("a\xe0\x80", 3), 0); /* overlong, not a cut €-like char */
    assert_int_equal(utf8_partial_tail("\x80\x80\x80\x80", 4), 0);
    assert_int_equal(utf8_partial_tail("a\xff", 2), 0);
    assert_int_equal(utf8_partial_head("\x80\x80\x80\x80x", 5), 3);
    /* A stray continuation byte after the cut point does not move the cut past ASCII. */
    assert_int_equal(utf8_cut("ab\x80", 3, 2), 2);
    /* %.*s with the precision prints whole characters only. */
    char buf[16];
    snprintf(buf, sizeof buf, "'%.*s'", utf8_prec("x\xc3\xa9y", 2), "x\xc3\xa9y");
    assert_string_equal(buf, "'x'");
    snprintf(buf, sizeof buf, "'%.*s'", utf8_prec("x\xc3\xa9y", 3), "x\xc3\xa9y");
    assert_string_equal(buf, "'x\xc3\xa9'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_boundaries),
        cmocka_unit_test(test_refuses_and_reports_offset),
        cmocka_unit_test(test_char_len),
        cmocka_unit_test(test_clean_keeps_valid_text),
        cmocka_unit_test(test_clean_replaces_bad_bytes_and_nul),
        cmocka_unit_test(test_cut_at_every_offset),
        cmocka_unit_test(test_partial_ends_at_every_offset),
        cmocka_unit_test(test_cut_of_invalid_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
