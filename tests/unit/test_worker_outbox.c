/* The worker's outbox: order, capacity, backoff after failures, the failing flag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "worker/outbox.h"

static outbox_msg_t *msg(outbox_kind_t kind, int64_t id)
{
    char *body = strdup("{}");
    outbox_msg_t *m = outbox_msg_new(kind, id, 1, MSG_EXECUTION_COMPLETED, "mid", "key", body, 2);
    assert_non_null(m);
    return m;
}

static void test_fifo_and_capacity(void **state)
{
    (void)state;
    outbox_t o;
    outbox_init(&o, 2, 100, 1000);
    assert_null(outbox_due(&o, 0));
    assert_int_equal(outbox_push(&o, msg(OUTBOX_RUNNING, 1), 0), 0);
    assert_int_equal(outbox_push(&o, msg(OUTBOX_COMPLETED, 1), 0), 0);
    outbox_msg_t *extra = msg(OUTBOX_RUNNING, 2);
    assert_int_equal(outbox_push(&o, extra, 0), -1); /* full: the caller keeps it */
    outbox_msg_free(extra);
    assert_int_equal(o.len, 2);
    outbox_msg_t *m = outbox_pop(&o);
    assert_int_equal(m->kind, OUTBOX_RUNNING); /* a running status goes out before its completion */
    outbox_msg_free(m);
    m = outbox_pop(&o);
    assert_int_equal(m->kind, OUTBOX_COMPLETED);
    outbox_msg_free(m);
    assert_null(outbox_pop(&o));
    assert_int_equal(o.len, 0);
    outbox_free(&o);
}

static void test_failure_waits_with_backoff(void **state)
{
    (void)state;
    outbox_t o;
    outbox_init(&o, 8, 100, 1000);
    assert_int_equal(outbox_push(&o, msg(OUTBOX_RUNNING, 1), 0), 0);
    assert_false(o.failing);
    /* random 0: the low end of each jittered step, 50, 100, 200 ... */
    assert_int_equal(outbox_failed(&o, 1000, 0, 0.0), 50);
    assert_true(o.failing);
    assert_int_equal(o.head->tries, 1);
    assert_null(outbox_due(&o, 1049));
    assert_ptr_equal(outbox_due(&o, 1050), o.head);
    assert_int_equal(outbox_failed(&o, 1050, 0, 0.0), 100);
    assert_int_equal(outbox_failed(&o, 1150, 0, 0.0), 200);
    assert_int_equal(o.head->tries, 3);
    /* an open breaker's wait is longer: it wins */
    assert_int_equal(outbox_failed(&o, 1350, 5000, 0.0), 5000);
    assert_null(outbox_due(&o, 6349));
    /* a refusal without a try (open breaker) waits, but counts nothing */
    outbox_defer(&o, 1350, 40);
    assert_int_equal(o.head->tries, 4);
    assert_null(outbox_due(&o, 1389));
    assert_non_null(outbox_due(&o, 1390));
    /* a reconnect: try now, but a failure continues the backoff where it was */
    outbox_retry_now(&o);
    assert_non_null(outbox_due(&o, 1400));
    assert_true(o.failing);
    assert_int_equal(outbox_failed(&o, 1400, 0, 0.0), 500); /* the cap: 1000 jittered to half */
    assert_null(outbox_due(&o, 1899));
    assert_non_null(outbox_due(&o, 1900));
    /* success ends the failing state and the backoff starts over */
    outbox_msg_free(outbox_pop(&o));
    assert_false(o.failing);
    assert_int_equal(outbox_push(&o, msg(OUTBOX_RUNNING, 2), 6400), 0);
    assert_non_null(outbox_due(&o, 6400));
    assert_int_equal(outbox_failed(&o, 6400, 0, 0.0), 50);
    outbox_free(&o);
    assert_int_equal(o.len, 0);
}

static void test_backoff_is_capped(void **state)
{
    (void)state;
    outbox_t o;
    outbox_init(&o, 8, 100, 1000);
    assert_int_equal(outbox_push(&o, msg(OUTBOX_COMPLETED, 1), 0), 0);
    int64_t d = 0;
    for (int i = 0; i < 20; i++)
        d = outbox_failed(&o, 0, 0, 0.999);
    assert_true(d <= 1000 && d >= 990);
    outbox_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_capacity),
        cmocka_unit_test(test_failure_waits_with_backoff),
        cmocka_unit_test(test_backoff_is_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
