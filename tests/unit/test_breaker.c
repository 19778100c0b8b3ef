/* Circuit breaker transitions driven by an injected clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "warren/breaker.h"

/* failure_threshold 3, success_threshold 2, open_timeout 1000 ms */
static breaker_t fresh(void)
{
    breaker_t b;
    breaker_init(&b, "test", 3, 2, 1000);
    return b;
}

static void fail_n(breaker_t *b, int n, int64_t now)
{
    for (int i = 0; i < n; i++) {
        assert_true(breaker_allow(b, now));
        breaker_record_failure(b, now);
    }
}

static void test_starts_closed(void **state)
{
    (void)state;
    breaker_t b = fresh();
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_true(breaker_allow(&b, 0));
    assert_int_equal(breaker_retry_in_ms(&b, 0), 0);
    assert_string_equal(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
}

static void test_opens_after_threshold(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 2, 10);
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_int_equal(b.consecutive_failures, 2);
    fail_n(&b, 1, 20);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(b.opened_at_ms, 20);
    assert_int_equal(b.times_opened, 1);
    assert_int_equal(b.failures, 3);
}

static void test_open_fails_fast_until_timeout(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 3, 0);
    assert_false(breaker_allow(&b, 1));
    assert_false(breaker_allow(&b, 999));
    assert_int_equal(b.calls_rejected, 2);
    assert_int_equal(breaker_retry_in_ms(&b, 400), 600);
    assert_int_equal(b.state, BREAKER_OPEN);
    /* open_timeout elapsed: the next call is the half-open probe */
    assert_true(breaker_allow(&b, 1000));
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(breaker_retry_in_ms(&b, 1000), 0);
}

static void test_half_open_single_probe(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 3, 0);
    assert_true(breaker_allow(&b, 1500));
    assert_true(b.probe_in_flight);
    /* a second caller while the probe runs is turned away */
    assert_false(breaker_allow(&b, 1501));
    assert_int_equal(b.calls_rejected, 1);
    breaker_record_success(&b, 1502);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_false(b.probe_in_flight);
    /* the next probe may go */
    assert_true(breaker_allow(&b, 1503));
}

static void test_half_open_closes_after_successes(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 3, 0);
    for (int i = 0; i < 2; i++) {
        assert_true(breaker_allow(&b, 2000 + i));
        breaker_record_success(&b, 2000 + i);
    }
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_int_equal(b.consecutive_failures, 0);
    assert_int_equal(b.half_open_successes, 0);
    assert_int_equal(b.successes, 2);
    /* closed again: it takes the full threshold to reopen */
    fail_n(&b, 2, 3000);
    assert_int_equal(b.state, BREAKER_CLOSED);
}

static void test_half_open_failure_reopens(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 3, 0);
    assert_true(breaker_allow(&b, 1000));
    breaker_record_success(&b, 1001);
    assert_true(breaker_allow(&b, 1002));
    breaker_record_failure(&b, 1003);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(b.opened_at_ms, 1003);
    assert_int_equal(b.times_opened, 2);
    /* the open period restarts from the reopening */
    assert_false(breaker_allow(&b, 2000));
    assert_true(breaker_allow(&b, 2003));
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    /* successes before the reopening do not count any more */
    breaker_record_success(&b, 2004);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
}

static void test_success_resets_consecutive_failures(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 2, 0);
    assert_true(breaker_allow(&b, 1));
    breaker_record_success(&b, 1);
    assert_int_equal(b.consecutive_failures, 0);
    fail_n(&b, 2, 2);
    assert_int_equal(b.state, BREAKER_CLOSED);
    fail_n(&b, 1, 3);
    assert_int_equal(b.state, BREAKER_OPEN);
}

static void test_late_results_while_open(void **state)
{
    (void)state;
    breaker_t b = fresh();
    fail_n(&b, 3, 0);
    /* a call admitted before the opening reports late: it changes nothing */
    breaker_record_success(&b, 5);
    breaker_record_failure(&b, 6);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(b.opened_at_ms, 0);
    assert_int_equal(b.times_opened, 1);
}

static void test_counters(void **state)
{
    (void)state;
    breaker_t b = fresh();
    assert_true(breaker_allow(&b, 0));
    breaker_record_success(&b, 0);
    fail_n(&b, 3, 1);
    assert_false(breaker_allow(&b, 2));
    assert_int_equal(b.calls_allowed, 4);
    assert_int_equal(b.calls_rejected, 1);
    assert_int_equal(b.successes, 1);
    assert_int_equal(b.failures, 3);
    assert_int_equal(b.times_opened, 1);
}

static void test_thresholds_clamped(void **state)
{
    (void)state;
    breaker_t b;
    breaker_init(&b, "zero", 0, 0, 0);
    assert_true(breaker_allow(&b, 0));
    breaker_record_failure(&b, 0);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_true(breaker_allow(&b, 0)); /* timeout 0: half-open at once */
    breaker_record_success(&b, 0);
    assert_int_equal(b.state, BREAKER_CLOSED);
}

/* A fresh connection proves the peer is back: probe at once instead of after open_timeout. */
static void test_reconnect_half_opens_at_once(void **state)
{
    (void)state;
    breaker_t b = fresh();
    breaker_reconnected(&b, 5);
    assert_int_equal(b.state, BREAKER_CLOSED); /* closed: nothing to do */
    fail_n(&b, 3, 10);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_false(breaker_allow(&b, 20));
    breaker_reconnected(&b, 30);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(breaker_retry_in_ms(&b, 30), 0);
    assert_true(breaker_allow(&b, 31));  /* the probe, long before open_timeout */
    assert_false(breaker_allow(&b, 32)); /* one at a time */
    breaker_reconnected(&b, 33);         /* half-open: unchanged, the probe stays in flight */
    assert_true(b.probe_in_flight);
    breaker_record_success(&b, 40);
    assert_true(breaker_allow(&b, 41));
    breaker_record_success(&b, 42);
    assert_int_equal(b.state, BREAKER_CLOSED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starts_closed),
        cmocka_unit_test(test_opens_after_threshold),
        cmocka_unit_test(test_open_fails_fast_until_timeout),
        cmocka_unit_test(test_half_open_single_probe),
        cmocka_unit_test(test_half_open_closes_after_successes),
        cmocka_unit_test(test_half_open_failure_reopens),
        cmocka_unit_test(test_success_resets_consecutive_failures),
        cmocka_unit_test(test_late_results_while_open),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_thresholds_clamped),
        cmocka_unit_test(test_reconnect_half_opens_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
