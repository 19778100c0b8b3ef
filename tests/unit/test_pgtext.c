/* Text for PostgreSQL: cleaning untrusted bytes, bytea hex, array literals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "executor/pgtext.h"

static void clean_keeps_valid_text(void **state)
{
    (void)state;
    const char *s = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    assert_true(pgtext_is_clean(s, strlen(s)));
    char *c = pgtext_clean(s, strlen(s));
    assert_string_equal(c, s);
    free(c);
}

static void clean_replaces_bad_bytes_and_nul(void **state)
{
    (void)state;
    const char in[] = {'a', '\0', 'b', (char)0xff, (char)0xc3, '(', (char)0xe2, (char)0x82};
    assert_false(pgtext_is_clean(in, sizeof in));
    char *c = pgtext_clean(in, sizeof in);
    /* NUL, 0xff, the lone lead byte 0xc3 and the truncated 3-byte sequence each become U+FFFD. */
    assert_string_equal(c, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd");
    assert_true(pgtext_is_clean(c, strlen(c)));
    free(c);
    /* Overlong and surrogate encodings are not text either. */
    const char overlong[] = {(char)0xc0, (char)0xaf};
    const char surrogate[] = {(char)0xed, (char)0xa0, (char)0x80};
    assert_false(pgtext_is_clean(overlong, 2));
    assert_false(pgtext_is_clean(surrogate, 3));
}

static void bytea_hex(void **state)
{
    (void)state;
    char *h = pgtext_bytea_hex("\x00\xff" "A", 3);
    assert_string_equal(h, "\\x00ff41");
    free(h);
    h = pgtext_bytea_hex("", 0);
    assert_string_equal(h, "\\x");
    free(h);
}

static void array_literals_quote_and_escape(void **state)
{
    (void)state;
    pgarr_t a;
    pgarr_init(&a);
    assert_string_equal(pgarr_text(&a), "{}");
    pgarr_add(&a, "plain");
    pgarr_add(&a, NULL);
    pgarr_add(&a, "with \"quotes\", commas and \\ backslash");
    pgarr_add(&a, "");
    pgarr_add(&a, "NULL");
    assert_string_equal(pgarr_text(&a),
                        "{\"plain\",NULL,\"with \\\"quotes\\\", commas and \\\\ backslash\",\"\",\"NULL\"}");
    pgarr_free(&a);

    pgarr_init(&a);
    pgarr_add_int(&a, -42);
    pgarr_add_int_or_null(&a, false, 7);
    pgarr_add_int_or_null(&a, true, INT64_MAX);
    assert_string_equal(pgarr_text(&a), "{-42,NULL,9223372036854775807}");
    pgarr_free(&a);
}

static void array_literals_grow(void **state)
{
    (void)state;
    pgarr_t a;
    pgarr_init(&a);
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 100; i++)
        pgarr_add(&a, i % 2 ? big : "\\\"");
    const char *t = pgarr_text(&a);
    assert_non_null(t);
    assert_int_equal(strlen(t), 2 + 99 + 50 * (sizeof big + 1) + 50 * 6);
    assert_int_equal(a.n, 100);
    pgarr_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean_keeps_valid_text),
        cmocka_unit_test(clean_replaces_bad_bytes_and_nul),
        cmocka_unit_test(bytea_hex),
        cmocka_unit_test(array_literals_quote_and_escape),
        cmocka_unit_test(array_literals_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
