/* Exponential backoff: doubling, cap, jitter range, reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "warren/backoff.h"

static void test_doubles_from_base(void **state)
{
    (void)state;
    backoff_t b;
    backoff_init(&b, 100, 10000);
    /* random 0 gives the bottom of the jitter range: d/2 */
    assert_int_equal(backoff_next(&b, 0.0), 50);
    assert_int_equal(backoff_next(&b, 0.0), 100);
    assert_int_equal(backoff_next(&b, 0.0), 200);
    assert_int_equal(backoff_next(&b, 0.0), 400);
    assert_int_equal(b.attempt, 4);
}

static void test_jitter_range(void **state)
{
    (void)state;
    backoff_t b;
    backoff_init(&b, 1000, 60000);
    assert_int_equal(backoff_next(&b, 0.5), 750);
    backoff_reset(&b);
    int64_t top = backoff_next(&b, 0.999999);
    assert_true(top >= 999 && top < 1000);
    backoff_reset(&b);
    /* out-of-range randoms are clamped, never produce a delay outside [d/2, d) */
    assert_int_equal(backoff_next(&b, -3.0), 500);
    backoff_reset(&b);
    assert_true(backoff_next(&b, 7.0) < 1000);
}

static void test_cap(void **state)
{
    (void)state;
    backoff_t b;
    backoff_init(&b, 100, 1000);
    for (int i = 0; i < 10; i++)
        (void)backoff_next(&b, 0.0);
    assert_int_equal(backoff_next(&b, 0.0), 500);
    int64_t d = backoff_next(&b, 0.999999);
    assert_true(d >= 999 && d <= 1000);
    /* many failures: no overflow, still capped */
    b.attempt = 900000;
    assert_int_equal(backoff_next(&b, 0.0), 500);
}

static void test_reset(void **state)
{
    (void)state;
    backoff_t b;
    backoff_init(&b, 100, 1000);
    (void)backoff_next(&b, 0.0);
    (void)backoff_next(&b, 0.0);
    backoff_reset(&b);
    assert_int_equal(b.attempt, 0);
    assert_int_equal(backoff_next(&b, 0.0), 50);
}

static void test_bad_parameters(void **state)
{
    (void)state;
    backoff_t b;
    backoff_init(&b, 0, -5);
    assert_int_equal(b.base_ms, 1);
    assert_int_equal(b.cap_ms, 1);
    assert_true(backoff_next(&b, 0.9) <= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubles_from_base),
        cmocka_unit_test(test_jitter_range),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_bad_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
