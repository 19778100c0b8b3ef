/* CLI helpers: strict numbers, JSON object checks, statuses, durations and table layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cli/cli_fmt.h"

static void test_parse_int64(void **state)
{
    (void)state;
    int64_t v = -7;
    assert_int_equal(cli_parse_int64("42", 1, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(cli_parse_int64("9223372036854775807", 1, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
    v = -7;
    const char *bad[] = {
        "",  " 42", "+42", "42 ", "42s", "4.2", "0x10", "abc", "0", "101", "9223372036854775808",
        "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cli_parse_int64(bad[i], 1, 100, &v), -1);
    assert_int_equal(v, -7); /* untouched on failure */
    assert_int_equal(cli_parse_int64(NULL, 1, 100, &v), -1);
    assert_int_equal(cli_parse_int64("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
}

static void test_json_object_check(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(cli_json_object_check("{}", err, sizeof err), 0);
    assert_int_equal(cli_json_object_check(" {\"a\": [1, {\"b\": null}]}\n ", err, sizeof err), 0);
    /* Single quotes and escaped double quotes inside strings are fine. */
    assert_int_equal(cli_json_object_check("{\"it's\": \"a \\\" 'b'\"}", err, sizeof err), 0);

    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"[1]", "array, not an object"},
        {"42", "int, not an object"},
        {"\"s\"", "string, not an object"},
        {"null", "null, not an object"},
        {"{\"a\":1} x", "offset"},
        {"{\"a\":1}{}", "offset"},
        {"{a:1}", "not valid JSON"},
        {"{'a':1}", "not valid JSON"},
        {"{\"a\":1,}", "not valid JSON"},
        {"{\"a\":", "not valid JSON"},
        {"", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(cli_json_object_check(bad[i].text, err, sizeof err), -1);
        if (!strstr(err, bad[i].reason))
            fail_msg("'%s': wanted '%s' in '%s'", bad[i].text, bad[i].reason, err);
    }
}

static void test_statuses(void **state)
{
    (void)state;
    assert_true(cli_status_known("requested"));
    assert_true(cli_status_known("abandoned"));
    assert_false(cli_status_known("Requested"));
    assert_false(cli_status_known(""));
    assert_false(cli_status_known(NULL));
    const char *terminal[] = {"completed", "failed", "cancelled", "timeout", "abandoned"};
    const char *active[] = {"requested", "scheduling", "scheduled", "running", "canceling"};
    for (size_t i = 0; i < 5; i++) {
        assert_true(cli_status_terminal(terminal[i]));
        assert_false(cli_status_terminal(active[i]));
        assert_non_null(strstr(cli_status_list(), terminal[i]));
        assert_non_null(strstr(cli_status_list(), active[i]));
    }
    assert_false(cli_status_terminal("bogus"));
    assert_string_equal(cli_status_list(), "requested, scheduling, scheduled, running, canceling, "
                                           "completed, failed, cancelled, timeout, abandoned");
    assert_string_equal(cli_status_final_list(),
                        "completed, failed, cancelled, timeout, abandoned");
}

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        double s;
        const char *want;
    } cases[] = {
        {0, "0ms"},       {0.0421, "42ms"},  {0.999, "999ms"}, {1, "1.0s"},       {12.36, "12.3s"},
        {59.99, "59.9s"}, {60, "1m00s"},     {245.7, "4m05s"}, {3599, "59m59s"},  {3600, "1h00m"},
        {7620, "2h07m"},  {86399, "23h59m"}, {86400, "1d00h"}, {273600, "3d04h"}, {-0.5, "-"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_fmt_duration(cases[i].s, buf, sizeof buf);
        assert_string_equal(buf, cases[i].want);
    }
    cli_fmt_duration(NAN, buf, sizeof buf);
    assert_string_equal(buf, "-");
}

/* Print t into a memory buffer and compare with the expected layout. */
static void assert_table(const cli_table_t *t, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    cli_table_print(t, f);
    fclose(f);
    assert_string_equal(text, want);
    free(text);
}

static void test_table(void **state)
{
    (void)state;
    static const char *const head[] = {"ID", "ACTION", "NOTE"};
    cli_table_t t;
    assert_int_equal(cli_table_init(&t, 3, head), 0);
    assert_table(&t, "ID  ACTION  NOTE\n");
    /* Cells are copied: the table keeps working after the caller's buffers change. */
    char id[8] = "12345";
    const char *r1[] = {id, "core.echo", "x"};
    const char *r2[] = {"7", NULL, "last column is not padded"};
    const char *r3[] = {"8", "h\xc3\xa9", ""}; /* two columns wide, three bytes */
    assert_int_equal(cli_table_add(&t, r1), 0);
    strcpy(id, "9");
    assert_int_equal(cli_table_add(&t, r2), 0);
    assert_int_equal(cli_table_add(&t, r3), 0);
    assert_table(&t, "ID     ACTION     NOTE\n"
                     "12345  core.echo  x\n"
                     "7      -          last column is not padded\n"
                     "8      h\xc3\xa9         \n");
    cli_table_free(&t);
    assert_null(t.cells);
}

static void test_table_grows(void **state)
{
    (void)state;
    static const char *const head[] = {"N"};
    cli_table_t t;
    assert_int_equal(cli_table_init(&t, 1, head), 0);
    for (int i = 0; i < 1000; i++) {
        char n[16];
        snprintf(n, sizeof n, "%d", i);
        const char *row[] = {n};
        assert_int_equal(cli_table_add(&t, row), 0);
    }
    assert_int_equal(t.nrows, 1001);
    assert_string_equal(t.cells[1000], "999");
    cli_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_int64), cmocka_unit_test(test_json_object_check),
        cmocka_unit_test(test_statuses),    cmocka_unit_test(test_durations),
        cmocka_unit_test(test_table),       cmocka_unit_test(test_table_grows),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
