/* Unit tests for strict UTF-8 validation at the boundaries of each sequence length. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "warren/utf8.h"

static bool valid(const char *s)
{
    return utf8_valid(s, strlen(s), NULL);
}

static void test_accepts_boundaries(void **state)
{
    (void)state;
    assert_true(utf8_valid("", 0, NULL));
    assert_true(valid("plain ascii \x7f"));
    assert_true(valid("\xc2\x80 \xdf\xbf"));                 /* U+0080, U+07FF */
    assert_true(valid("\xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf")); /* around surrogates */
    assert_true(valid("\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf"));  /* U+10000, U+10FFFF */
    assert_true(utf8_valid("a\0b", 3, NULL));               /* NUL is the caller's concern */
}

static void test_refuses_and_reports_offset(void **state)
{
    (void)state;
    static const struct { const char *s; size_t at; } bad[] = {
        {"ab\x80", 2},              /* stray continuation */
        {"\xc1\xbf", 0},            /* overlong two-byte */
        {"x\xe0\x9f\xbf", 1},       /* overlong three-byte */
        {"\xed\xa0\x80", 0},        /* surrogate U+D800 */
        {"\xf0\x8f\xbf\xbf", 0},    /* overlong four-byte */
        {"\xf4\x90\x80\x80", 0},    /* U+110000 */
        {"\xf5\x80\x80\x80", 0},
        {"ok\xe2\x82", 2},          /* truncated at the end */
        {"\xe2\x28\xa1", 0},        /* bad second byte */
        {"\xf0\x90\x28\xbc", 0},    /* bad third byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t at = 999;
        if (utf8_valid(bad[i].s, strlen(bad[i].s), &at))
            fail_msg("case %zu accepted", i);
        assert_int_equal(at, bad[i].at);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_boundaries),
        cmocka_unit_test(test_refuses_and_reports_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
