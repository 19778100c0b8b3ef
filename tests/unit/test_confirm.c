/* Publisher-confirm bookkeeping: acks, nacks, multiple, returns, channel resets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "mq/confirm.h"

static int setup(void **state)
{
    static confirm_tracker_t t;
    confirm_init(&t);
    *state = &t;
    return 0;
}

static int teardown(void **state)
{
    confirm_free(*state);
    return 0;
}

/* Track n publishes with cookies 100, 101, ... */
static void track_n(confirm_tracker_t *t, int n)
{
    for (int i = 0; i < n; i++)
        confirm_track(t, 100 + (uint64_t)t->len);
}

static void test_tags_start_at_one(void **state)
{
    confirm_tracker_t *t = *state;
    assert_int_equal(confirm_track(t, 7), 1);
    assert_int_equal(confirm_track(t, 8), 2);
    assert_int_equal(confirm_pending(t), 2);
    assert_int_equal(confirm_result(t, 1), CONFIRM_PENDING);
    assert_int_equal(confirm_result_cookie(t, 8), CONFIRM_PENDING);
}

static void test_single_ack_and_nack(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 3);
    confirm_on_ack(t, 2, false);
    confirm_on_nack(t, 3, false);
    assert_int_equal(confirm_result(t, 1), CONFIRM_PENDING);
    assert_int_equal(confirm_result(t, 2), CONFIRM_ACKED);
    assert_int_equal(confirm_result(t, 3), CONFIRM_NACKED);
    assert_int_equal(confirm_pending(t), 1);
}

static void test_multiple_ack(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 5);
    confirm_on_ack(t, 3, true);
    for (uint64_t tag = 1; tag <= 3; tag++)
        assert_int_equal(confirm_result(t, tag), CONFIRM_ACKED);
    assert_int_equal(confirm_result(t, 4), CONFIRM_PENDING);
    confirm_on_ack(t, 5, true);
    assert_int_equal(confirm_pending(t), 0);
}

static void test_multiple_nack(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 4);
    confirm_on_nack(t, 4, true);
    for (uint64_t tag = 1; tag <= 4; tag++)
        assert_int_equal(confirm_result(t, tag), CONFIRM_NACKED);
}

static void test_mixed_multiple_keeps_first_outcome(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 6);
    confirm_on_nack(t, 2, false);
    confirm_on_ack(t, 4, true);  /* 1, 3, 4 acked; 2 stays nacked */
    confirm_on_nack(t, 6, true); /* 5, 6 nacked; 4 stays acked */
    assert_int_equal(confirm_result(t, 1), CONFIRM_ACKED);
    assert_int_equal(confirm_result(t, 2), CONFIRM_NACKED);
    assert_int_equal(confirm_result(t, 3), CONFIRM_ACKED);
    assert_int_equal(confirm_result(t, 4), CONFIRM_ACKED);
    assert_int_equal(confirm_result(t, 5), CONFIRM_NACKED);
    assert_int_equal(confirm_result(t, 6), CONFIRM_NACKED);
}

static void test_return_survives_ack(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 3);
    confirm_on_return(t, 2);
    assert_int_equal(confirm_result(t, 2), CONFIRM_RETURNED);
    confirm_on_ack(t, 2, false);
    assert_int_equal(confirm_result(t, 2), CONFIRM_RETURNED);
    confirm_on_ack(t, 3, true);
    assert_int_equal(confirm_result(t, 1), CONFIRM_ACKED);
    assert_int_equal(confirm_result(t, 2), CONFIRM_RETURNED);
    assert_int_equal(confirm_result(t, 3), CONFIRM_ACKED);
    /* a return after the ack cannot happen on the wire; it must not rewrite history */
    confirm_on_return(t, 1);
    assert_int_equal(confirm_result(t, 1), CONFIRM_ACKED);
}

static void test_reset_marks_outstanding_lost(void **state)
{
    confirm_tracker_t *t = *state;
    confirm_track(t, 10);
    confirm_track(t, 11);
    confirm_track(t, 12);
    confirm_on_ack(t, 1, false);
    confirm_reset(t);
    assert_int_equal(confirm_pending(t), 0);
    assert_int_equal(confirm_result_cookie(t, 10), CONFIRM_ACKED);
    assert_int_equal(confirm_result_cookie(t, 11), CONFIRM_LOST);
    assert_int_equal(confirm_result_cookie(t, 12), CONFIRM_LOST);
    /* the new channel's tags restart at 1 and never touch the old entries */
    assert_int_equal(confirm_track(t, 13), 1);
    confirm_on_nack(t, 1, true);
    assert_int_equal(confirm_result(t, 1), CONFIRM_NACKED);
    assert_int_equal(confirm_result_cookie(t, 10), CONFIRM_ACKED);
    assert_int_equal(confirm_result_cookie(t, 11), CONFIRM_LOST);
    assert_int_equal(confirm_result_cookie(t, 13), CONFIRM_NACKED);
}

static void test_unknown_tags_ignored(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 2);
    confirm_on_ack(t, 9, false);
    confirm_on_nack(t, 0, true);
    confirm_on_return(t, 42);
    assert_int_equal(confirm_pending(t), 2);
    assert_int_equal(confirm_result(t, 9), CONFIRM_UNKNOWN);
    assert_int_equal(confirm_result(t, 0), CONFIRM_UNKNOWN);
    assert_int_equal(confirm_result_cookie(t, 999), CONFIRM_UNKNOWN);
    /* multiple beyond the last tag settles what exists */
    confirm_on_ack(t, 50, true);
    assert_int_equal(confirm_pending(t), 0);
}

static void test_collect_keeps_pending(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 5);
    confirm_on_ack(t, 2, true);
    confirm_on_ack(t, 4, false);
    confirm_collect(t);
    assert_int_equal(t->len, 2);
    assert_int_equal(confirm_result(t, 1), CONFIRM_UNKNOWN);
    assert_int_equal(confirm_result(t, 3), CONFIRM_PENDING);
    assert_int_equal(confirm_result(t, 5), CONFIRM_PENDING);
    confirm_on_ack(t, 5, true);
    assert_int_equal(confirm_result(t, 3), CONFIRM_ACKED);
    confirm_collect(t);
    assert_int_equal(t->len, 0);
    assert_int_equal(confirm_track(t, 1), 6);
}

static void test_grows(void **state)
{
    confirm_tracker_t *t = *state;
    track_n(t, 1000);
    assert_int_equal(confirm_pending(t), 1000);
    confirm_on_ack(t, 999, true);
    assert_int_equal(confirm_pending(t), 1);
    assert_int_equal(confirm_result(t, 1000), CONFIRM_PENDING);
    assert_int_equal(confirm_result_cookie(t, 100 + 999), CONFIRM_PENDING);
    assert_string_equal(confirm_result_name(CONFIRM_RETURNED), "returned");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tags_start_at_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_ack_and_nack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multiple_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multiple_nack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mixed_multiple_keeps_first_outcome, setup, teardown),
        cmocka_unit_test_setup_teardown(test_return_survives_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_marks_outstanding_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_tags_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_keeps_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
