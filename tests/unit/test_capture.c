/* Unit tests for output capture: caps, tails, UTF-8 repair and the JSON result shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "worker/capture.h"

static void append(capture_t *c, const char *s)
{
    assert_int_equal(capture_append(c, s, strlen(s)), 0);
}

static char *result(const char *text, bool truncated, bool empty_is_object)
{
    bool oom;
    char *out = capture_result_json(text, strlen(text), truncated, empty_is_object, &oom);
    assert_false(oom);
    return out;
}

/* The result for text (empty output counts as {}) must be want. */
static void assert_result(const char *text, bool truncated, const char *want)
{
    char *r = result(text, truncated, true);
    assert_string_equal(r, want);
    free(r);
}

static void test_head_keeps_first_bytes(void **state)
{
    capture_t c;
    capture_init(&c, 5, false);
    append(&c, "abc");
    assert_false(c.truncated);
    append(&c, "defgh");
    assert_true(c.truncated);
    assert_int_equal(c.len, 5);
    assert_memory_equal(c.buf, "abcde", 5);
    append(&c, "more"); /* past the cap: dropped, still no error */
    assert_int_equal(c.len, 5);
    capture_reset(&c);
}

static void test_tail_keeps_last_bytes(void **state)
{
    capture_t c;
    capture_init(&c, 4, true);
    append(&c, "ab");
    assert_false(c.truncated);
    append(&c, "cdef");
    assert_true(c.truncated);
    assert_memory_equal(c.buf, "cdef", 4);
    append(&c, "0123456789");
    assert_memory_equal(c.buf, "6789", 4);
    append(&c, "X");
    assert_memory_equal(c.buf, "789X", 4);
    capture_reset(&c);
}

static void test_large_head_grows(void **state)
{
    capture_t c;
    capture_init(&c, 100000, false);
    char chunk[1000];
    memset(chunk, 'z', sizeof chunk);
    for (int i = 0; i < 150; i++)
        assert_int_equal(capture_append(&c, chunk, sizeof chunk), 0);
    assert_int_equal(c.len, 100000);
    assert_true(c.truncated);
    assert_true(c.alloc <= 100000);
    capture_reset(&c);
}

static void test_text_repairs_utf8(void **state)
{
    capture_t c;
    capture_init(&c, 64, false);
    /* valid é, a stray continuation byte, a NUL, an overlong '/', a surrogate */
    static const char raw[] = "\xC3\xA9|\x80|\0|\xC0\xAF|\xED\xA0\x80|";
    assert_int_equal(capture_append(&c, raw, sizeof raw - 1), 0);
    char *text = capture_text(&c);
    assert_string_equal(text, "\xC3\xA9|\xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD|"
                              "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|");
    free(text);
    capture_reset(&c);
}

static void test_text_drops_cut_characters(void **state)
{
    capture_t head, tail;
    capture_init(&head, 3, false);
    append(&head, "a\xE2\x82\xAC"); /* "a€": the cap keeps two of the euro sign's three bytes */
    capture_init(&tail, 2, true);
    append(&tail, "x\xC3\xA9y"); /* "xéy": the tail keeps the last byte of é and "y" */
    char *h = capture_text(&head), *t = capture_text(&tail);
    assert_string_equal(h, "a");
    assert_string_equal(t, "y");
    free(h);
    free(t);
    capture_reset(&head);
    capture_reset(&tail);
}

static void test_result_keeps_valid_json(void **state)
{
    assert_result("  {\"a\": [1, 2.50, \"x\"]}\n", false, "{\"a\": [1, 2.50, \"x\"]}");
    assert_result("42\n", false, "42");
    assert_result("\"just a string\"", false, "\"just a string\"");
}

static void test_result_wraps_other_text(void **state)
{
    assert_result("hello \"world\"\n", false, "{\"output\":\"hello \\\"world\\\"\"}");
    assert_result("{\"a\":1} {\"b\":2}", false, "{\"output\":\"{\\\"a\\\":1} {\\\"b\\\":2}\"}");
    assert_result("{'a': 1}", false, "{\"output\":\"{'a': 1}\"}");
    assert_result("[1, 2", false, "{\"output\":\"[1, 2\"}");
}

/* Text json-c would take but RFC 8259 (and PostgreSQL jsonb) would not is kept as text. */
static void test_result_strict_json_only(void **state)
{
    static const char *const rejected[] = {
        "NaN",         "-Infinity",   "1.",          ".5",
        "01",          "+1",          "1e",          "[1,]",
        "{\"a\":1,}",  "{\"a\" 1}",   "\"a\tb\"",    "\"\\x41\"",
        "\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "\"\\u12G4\"", "tru",         "nul",         "[",
        "\"open",      "{\"a\"}",     "{1:2}",
    };
    for (size_t i = 0; i < sizeof rejected / sizeof *rejected; i++) {
        char *r = result(rejected[i], false, true);
        assert_non_null(strstr(r, "\"output\":"));
        free(r);
    }
    static const char *const accepted[] = {
        "-0",
        "1.5e-3",
        "0E+2",
        "[]",
        "{}",
        "[null,true,false]",
        "\"\\ud83d\\ude00 \\/\\n\"",
        "{\"a\":{\"b\":[{}]}}",
        "\"\xE2\x82\xAC\"",
    };
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        assert_result(accepted[i], false, accepted[i]);
    }
}

/* Found by tests/fuzz/fuzz_capture.c: a NUL among the four hex digits of a \u escape ended
 * strtol early, so "\uA<NUL>.." passed as \u000A and the output, raw NUL and control bytes
 * included, became the result: text no JSON reader takes (the NUL even cut it short). */
static void test_result_escape_digits_are_hex(void **state)
{
    (void)state;
    static const char output[] = {'"', '\\', 'u', 'A', '\0', 0x01, (char)0xfb, '"'};
    bool oom;
    char *r = capture_result_json(output, sizeof output, false, true, &oom);
    assert_non_null(r);
    assert_string_equal(r, "{\"output\":\"\\\"\\\\uA\xEF\xBF\xBD\\u0001\xEF\xBF\xBD\\\"\"}");
    free(r);
    static const char *const bad[] = {"\"\\u 12A\"", "\"\\u+12A\"", "\"\\u-12A\"",
                                      "\"\\u0x1A\"", "\"\\u12\"",   "\"\\ud83d\\u DE0\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        r = result(bad[i], false, true);
        if (!strstr(r, "\"output\":"))
            fail_msg("%s taken as JSON", bad[i]);
        free(r);
    }
}

/* jsonb's numeric range, each case checked against PostgreSQL 15 with
 * select '{"x": N}'::jsonb (which answers "value overflows numeric format" for the others). */
static const struct {
    const char *num;
    bool storable;
} numbers[] = {
    {"0", true},
    {"-0", true},
    {"1E+2", true},
    {"1e-0", true},
    {"1e131071", true}, /* the largest power of ten */
    {"-1e131071", true},
    {"9.99e131071", true},
    {"99999e131067", true},
    {"0.000001e131077", true}, /* leading zeros do not count */
    {"1e131072", false},
    {"-1e131072", false},
    {"10e131071", false},
    {"1e999999", false}, /* the example */
    {"1e-16383", true},  /* the smallest: 16383 digits of scale */
    {"0.1e-16382", true},
    {"123.456e-16380", true},
    {"0.0000e-16379", true},
    {"1e-16384", false},
    {"0.10e-16382", false}, /* a trailing zero is scale too */
    {"123.456e-16381", false},
    {"0.0000e-16380", false}, /* zero too */
    {"1e-999999", false},
    {"0e999999", true}, /* zero has no magnitude... */
    {"0e1073741822", true},
    {"0e1073741823", false}, /* ...but the exponent itself is bounded */
    {"0e99999999999999999999", false},
    {"0e-1073741822", false},
    {"1e-99999999999999999999", false},
    {"5e00000000000000000000000003", true},
};

static void test_number_storable(void **state)
{
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
        if (capture_number_storable(numbers[i].num, strlen(numbers[i].num)) != numbers[i].storable)
            fail_msg("%s: want %s", numbers[i].num, numbers[i].storable ? "storable" : "refused");
}

/* Digit counts: 131072 before the point and 16383 after are the most jsonb takes. */
static void test_number_storable_digits(void **state)
{
    size_t n = 131073;
    char *num = malloc(n + 3);
    memset(num, '9', n);
    assert_true(capture_number_storable(num, n - 1));
    assert_false(capture_number_storable(num, n));
    memcpy(num, "0.", 2);
    assert_true(capture_number_storable(num, 2 + 16383));
    assert_false(capture_number_storable(num, 2 + 16384));
    free(num);
}

/* JSON with a number jsonb refuses is sent as text, marked; other text is not marked. */
static void test_result_unstorable_number(void **state)
{
    assert_result("{\"x\":1e999999}\n", false,
                  "{\"output\":\"{\\\"x\\\":1e999999}\",\"unstorable\":\"number out of range\"}");
    assert_result("[1, 2, 1e-16384]", false,
                  "{\"output\":\"[1, 2, 1e-16384]\",\"unstorable\":\"number out of range\"}");
    assert_result("[1e999999", false, "{\"output\":\"[1e999999\"}"); /* not JSON at all */
    assert_result("[1e131071]", false, "[1e131071]");
}

static void test_result_depth_is_bounded(void **state)
{
    char deep[300];
    memset(deep, '[', 150);
    memset(deep + 150, ']', 150);
    char *r = capture_result_json(deep, sizeof deep, false, true, &(bool){false});
    assert_non_null(strstr(r, "\"output\":"));
    free(r);
    r = capture_result_json(deep + 100, 100, false, true, &(bool){false}); /* 50 deep */
    assert_string_equal(r, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                           "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
    free(r);
}

static void test_result_truncated_is_text(void **state)
{
    /* looks complete, but it was cut */
    assert_result("[1,2]", true, "{\"output\":\"[1,2]\",\"truncated\":true}");
}

static void test_result_invalid_utf8_json_is_wrapped(void **state)
{
    assert_result("\"\xFF\"", false, "{\"output\":\"\\\"\xEF\xBF\xBD\\\"\"}");
}

static void test_result_empty(void **state)
{
    assert_result(" \n", false, "{}");
    assert_null(result("", false, false));
}

static void test_error_text_is_utf8(void **state)
{
    char dst[8];
    capture_error_text("bad \xFF", dst, sizeof dst); /* 4 + 3 bytes: fits exactly */
    assert_string_equal(dst, "bad \xEF\xBF\xBD");
    capture_error_text("ab\xE2\x82", dst, sizeof dst); /* a euro sign the module's snprintf cut */
    assert_string_equal(dst, "ab");
    capture_error_text("abcdef\xC3\xA9", dst, sizeof dst); /* é would not fit whole */
    assert_string_equal(dst, "abcdef");
    capture_error_text("", dst, sizeof dst);
    assert_string_equal(dst, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_keeps_first_bytes),
        cmocka_unit_test(test_tail_keeps_last_bytes),
        cmocka_unit_test(test_large_head_grows),
        cmocka_unit_test(test_text_repairs_utf8),
        cmocka_unit_test(test_text_drops_cut_characters),
        cmocka_unit_test(test_result_keeps_valid_json),
        cmocka_unit_test(test_result_wraps_other_text),
        cmocka_unit_test(test_result_strict_json_only),
        cmocka_unit_test(test_result_escape_digits_are_hex),
        cmocka_unit_test(test_number_storable),
        cmocka_unit_test(test_number_storable_digits),
        cmocka_unit_test(test_result_unstorable_number),
        cmocka_unit_test(test_result_depth_is_bounded),
        cmocka_unit_test(test_result_truncated_is_text),
        cmocka_unit_test(test_result_invalid_utf8_json_is_wrapped),
        cmocka_unit_test(test_result_empty),
        cmocka_unit_test(test_error_text_is_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
