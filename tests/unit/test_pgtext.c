/* Text for PostgreSQL: bytea hex and array literals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "executor/pgtext.h"

static void bytea_hex(void **state)
{
    (void)state;
    const char bytes[] = {'\0', (char)0xff, 'A'};
    char *h = pgtext_bytea_hex(bytes, sizeof bytes);
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
    assert_string_equal(
        pgarr_text(&a),
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
        cmocka_unit_test(bytea_hex),
        cmocka_unit_test(array_literals_quote_and_escape),
        cmocka_unit_test(array_literals_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
