/* Unit tests for the migration statement splitter (src/db/sql_split.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "db/sql_split.h"

#define MAX_STMTS 8

typedef struct split {
    int n;
    char text[MAX_STMTS][256];
    int line[MAX_STMTS];
} split_t;

static void split_all(const char *sql, split_t *out)
{
    size_t pos = 0;
    int line = 1;
    sql_stmt_t st;
    memset(out, 0, sizeof *out);
    while (out->n < MAX_STMTS && sql_next_statement(sql, strlen(sql), &pos, &line, &st)) {
        snprintf(out->text[out->n], sizeof out->text[0], "%.*s", (int)st.len, sql + st.start);
        out->line[out->n] = st.line;
        out->n++;
    }
    assert_true(pos <= strlen(sql));
}

static void test_plain_statements_and_lines(void **state)
{
    (void)state;
    split_t s;
    split_all("CREATE TABLE a (id int);\n\nINSERT INTO a\n VALUES (1);\nSELECT 2", &s);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.text[0], "CREATE TABLE a (id int)");
    assert_int_equal(s.line[0], 1);
    assert_string_equal(s.text[1], "INSERT INTO a\n VALUES (1)");
    assert_int_equal(s.line[1], 3);
    assert_string_equal(s.text[2], "SELECT 2"); /* no final ';' needed */
    assert_int_equal(s.line[2], 5);
}

static void test_semicolons_in_quotes(void **state)
{
    (void)state;
    split_t s;
    split_all("SELECT 'a;b', 'it''s;';\nSELECT \"odd;name\" FROM t;\nSELECT E'x\\';y';SELECT 3;",
              &s);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.text[0], "SELECT 'a;b', 'it''s;'");
    assert_string_equal(s.text[1], "SELECT \"odd;name\" FROM t");
    assert_string_equal(s.text[2], "SELECT E'x\\';y'");
    assert_string_equal(s.text[3], "SELECT 3");
}

static void test_backslash_is_plain_in_standard_strings(void **state)
{
    (void)state;
    split_t s;
    /* standard_conforming_strings: 'a\' is a complete string, so the ';' after it splits. */
    split_all("SELECT 'a\\';SELECT 2;", &s);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.text[0], "SELECT 'a\\'");
}

static void test_comments(void **state)
{
    (void)state;
    split_t s;
    split_all("-- leading; comment\n/* block; /* nested; */ still; */\n"
              "SELECT 1 -- trailing; here\n, 2;\n-- only a comment at the end;\n",
              &s);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.text[0], "SELECT 1 -- trailing; here\n, 2");
    assert_int_equal(s.line[0], 3);
}

static void test_dollar_quotes(void **state)
{
    (void)state;
    split_t s;
    split_all("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;\n"
              "DO $body$ BEGIN PERFORM '$$;'; END $body$;\n"
              "PREPARE p AS SELECT $1::int; SELECT a$b FROM t;",
              &s);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.text[0],
                        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$");
    assert_string_equal(s.text[1], "DO $body$ BEGIN PERFORM '$$;'; END $body$");
    assert_int_equal(s.line[1], 2);
    assert_string_equal(s.text[2], "PREPARE p AS SELECT $1::int");
    assert_string_equal(s.text[3], "SELECT a$b FROM t");
}

static void test_empty_statements_and_blank_text(void **state)
{
    (void)state;
    split_t s;
    split_all(";;\n ; SELECT 1;;", &s);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.text[0], "SELECT 1");
    assert_int_equal(s.line[0], 2);
    split_all("  \n-- nothing\n/* at all */\n", &s);
    assert_int_equal(s.n, 0);
    split_all("", &s);
    assert_int_equal(s.n, 0);
}

static void test_unterminated_runs_to_end(void **state)
{
    (void)state;
    split_t s;
    split_all("SELECT 1; SELECT 'open; SELECT 2;", &s);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.text[1], "SELECT 'open; SELECT 2;");
    split_all("SELECT $$ never closed; SELECT 3", &s);
    assert_int_equal(s.n, 1);
    split_all("SELECT 1 /* open; comment", &s);
    assert_int_equal(s.n, 1);
}

static void test_char_to_byte(void **state)
{
    (void)state;
    const char *s = "SELECT 'é', ñ"; /* é and ñ are two bytes each */
    size_t len = strlen(s);
    assert_int_equal(sql_char_to_byte(s, len, 1), 0);
    assert_int_equal(sql_char_to_byte(s, len, 9), 8);   /* é */
    assert_int_equal(sql_char_to_byte(s, len, 10), 10); /* the quote after it */
    assert_int_equal(sql_char_to_byte(s, len, 13), 13); /* ñ */
    assert_int_equal(sql_char_to_byte(s, len, 99), len);
    assert_int_equal(sql_char_to_byte(s, len, 0), len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_statements_and_lines),
        cmocka_unit_test(test_semicolons_in_quotes),
        cmocka_unit_test(test_backslash_is_plain_in_standard_strings),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_dollar_quotes),
        cmocka_unit_test(test_empty_statements_and_blank_text),
        cmocka_unit_test(test_unterminated_runs_to_end),
        cmocka_unit_test(test_char_to_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
