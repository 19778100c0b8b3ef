/* RFC 3339 date-times: every accepted and refused form, and the formatter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "warren/timestamp.h"

#define T_2024_05_06_070809 INT64_C(1714979289000000)

static const struct {
    const char *text;
    int64_t us;
} accepted[] = {
    {"1970-01-01T00:00:00Z", 0},
    {"1970-01-01T00:00:00.000001Z", 1},
    {"1969-12-31T23:59:59.999999Z", -1},
    {"2024-05-06T07:08:09Z", T_2024_05_06_070809},
    {"2024-05-06t07:08:09z", T_2024_05_06_070809}, /* either case */
    {"2024-05-06T07:08:09.1Z", T_2024_05_06_070809 + 100000},
    {"2024-05-06T07:08:09.123456789Z", T_2024_05_06_070809 + 123456}, /* kept to the µs */
    {"2024-05-06T07:08:09.9999999Z", T_2024_05_06_070809 + 999999},   /* truncated, not rounded */
    {"2024-05-06T08:08:09+01:00", T_2024_05_06_070809},
    {"2024-05-06T02:38:09-04:30", T_2024_05_06_070809},
    {"2024-05-06T07:08:09+00:00", T_2024_05_06_070809},
    {"2024-05-06T07:08:09-00:00", T_2024_05_06_070809}, /* UTC, local offset unknown */
    {"2024-01-01T00:00:00+23:59", INT64_C(1703980860000000)},
    {"2024-02-29T12:00:00Z", INT64_C(1709208000000000)},          /* leap year */
    {"2000-02-29T00:00:00Z", INT64_C(951782400000000)},           /* divisible by 400 */
    {"2016-12-31T23:59:60Z", INT64_C(1483228800000000)},          /* leap second: next day */
    {"2017-01-01T00:59:60+01:00", INT64_C(1483228800000000)},     /* the same, local time */
    {"0001-01-01T00:00:00Z", INT64_C(-62135596800000000)},        /* the first instant */
    {"9999-12-31T23:59:59.999999Z", INT64_C(253402300799999999)}, /* the last */
};

static const char *const refused[] = {
    "",
    "2024",
    "2024-05-06",
    "2024-05-06T07:08Z",    /* no seconds */
    "2024-05-06T07:08:09",  /* no offset */
    "2024-05-06 07:08:09Z", /* space separator: not accepted */
    "2024-05-06_07:08:09Z",
    "2024-5-06T07:08:09Z",
    "+2024-05-06T07:08:09Z",
    "2024-05-06T7:08:09Z",
    "2024-13-06T07:08:09Z",
    "2024-00-06T07:08:09Z",
    "2024-05-00T07:08:09Z",
    "2024-04-31T07:08:09Z", /* 31 April */
    "2024-02-30T07:08:09Z",
    "2023-02-29T07:08:09Z", /* not a leap year */
    "1900-02-29T07:08:09Z", /* divisible by 100 */
    "2026-02-30T25:61:00Z",
    "2024-05-06T24:00:00Z",
    "2024-05-06T07:60:09Z",
    "2024-05-06T07:08:61Z",
    "2024-05-06T12:30:60Z",      /* second 60 only ends a UTC day */
    "2016-12-31T23:59:60+01:00", /* that is 22:59:60 UTC */
    "2024-05-06T07:08:09.Z",
    "2024-05-06T07:08:09.1234567891Z", /* more than 9 digits */
    "2024-05-06T07:08:09,5Z",
    "2024-05-06T07:08:09Zjunk",
    "2024-05-06T07:08:09Z ",
    "2024-05-06T07:08:09 Z",
    "2024-05-06T07:08:09+0100",
    "2024-05-06T07:08:09+01",
    "2024-05-06T07:08:09+24:00",
    "2024-05-06T07:08:09+01:60",
    "2024-05-06T07:08:09+01:00:00",
    "0000-01-01T00:00:00Z",      /* year 0 */
    "0001-01-01T00:30:00+01:00", /* year 0 in UTC */
    "9999-12-31T23:59:59-00:01", /* year 10000 in UTC */
};

static void test_accepted_forms(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        int64_t us = 42;
        if (ts_parse(accepted[i].text, &us) != 0)
            fail_msg("'%s' refused", accepted[i].text);
        if (us != accepted[i].us)
            fail_msg("'%s': %lld, want %lld", accepted[i].text, (long long)us,
                     (long long)accepted[i].us);
    }
}

static void test_refused_forms(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        int64_t us = 42;
        if (ts_parse(refused[i], &us) == 0)
            fail_msg("'%s' accepted", refused[i]);
        assert_int_equal(us, 42); /* untouched */
    }
    int64_t us;
    assert_int_equal(ts_parse(NULL, &us), -1);
}

static void test_format(void **state)
{
    (void)state;
    char buf[TS_TEXT_MAX];
    ts_format(0, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    ts_format(-1, buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
    ts_format(T_2024_05_06_070809 + 123456, buf, sizeof buf);
    assert_string_equal(buf, "2024-05-06T07:08:09.123Z");
    ts_format_us(T_2024_05_06_070809 + 123456, buf, sizeof buf);
    assert_string_equal(buf, "2024-05-06T07:08:09.123456Z");
    ts_format_us(INT64_C(-62135596800000000), buf, sizeof buf);
    assert_string_equal(buf, "0001-01-01T00:00:00.000000Z");
    ts_format_us(INT64_C(253402300799999999), buf, sizeof buf);
    assert_string_equal(buf, "9999-12-31T23:59:59.999999Z");
}

/* What the formatters write, the parser reads back as the same instant. */
static void test_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        char buf[TS_TEXT_MAX];
        int64_t back;
        ts_format_us(accepted[i].us, buf, sizeof buf);
        assert_int_equal(ts_parse(buf, &back), 0);
        assert_int_equal(back, accepted[i].us);
        ts_format(accepted[i].us, buf, sizeof buf);
        assert_int_equal(ts_parse(buf, &back), 0);
        assert_int_equal(back, accepted[i].us - ((accepted[i].us % 1000) + 1000) % 1000);
    }
}

static void test_now(void **state)
{
    (void)state;
    char buf[TS_TEXT_MAX];
    int64_t before = now_wall_ms(), us;
    ts_now(buf, sizeof buf);
    assert_int_equal(strlen(buf), 24);
    assert_int_equal(buf[23], 'Z');
    assert_int_equal(ts_parse(buf, &us), 0);
    assert_true(us / 1000 >= before && us / 1000 <= now_wall_ms());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted_forms),
        cmocka_unit_test(test_refused_forms),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_now),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
