/* The body accumulator: a body within the limit whole, one over it by its prefix only, and a
 * peer that sends more than it announced refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "mq/body.h"

/* Feed `size` bytes of a repeating pattern in frames of `frame` bytes. */
static void feed(body_acc_t *a, uint64_t size, size_t frame)
{
    char buf[1100];
    assert_true(frame + 26 <= sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)('a' + i % 26);
    uint64_t sent = 0;
    while (sent < size) {
        size_t n = size - sent < frame ? (size_t)(size - sent) : frame;
        assert_false(body_acc_complete(a));
        assert_int_equal(body_acc_add(a, buf + sent % 26, n), 0);
        sent += n;
    }
    assert_true(body_acc_complete(a));
}

/* Take what a kept and check it is the first `len` bytes of the pattern feed() sends. */
static void expect_kept(body_acc_t *a, size_t len)
{
    size_t got;
    char *body = body_acc_take(a, &got);
    assert_int_equal(got, len);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(body[i], 'a' + i % 26);
    free(body);
}

static void test_within_limit_kept_whole(void **state)
{
    (void)state;
    body_acc_t a;
    assert_int_equal(body_acc_start(&a, 2500, 4096, 100), 0);
    assert_false(a.cut);
    feed(&a, 2500, 700);
    expect_kept(&a, 2500);
    body_acc_free(&a); /* nothing left: a no-op */
}

static void test_limit_itself_is_whole(void **state)
{
    (void)state;
    body_acc_t a;
    assert_int_equal(body_acc_start(&a, 4096, 4096, 100), 0);
    assert_false(a.cut);
    assert_int_equal(a.keep, 4096);
    body_acc_free(&a);
}

static void test_over_limit_keeps_prefix(void **state)
{
    (void)state;
    body_acc_t a;
    /* Announced far beyond memory: only the prefix is ever allocated. */
    uint64_t huge = UINT64_C(1) << 40;
    assert_int_equal(body_acc_start(&a, huge, 4096, 100), 0);
    assert_true(a.cut);
    assert_int_equal(a.keep, 100);
    body_acc_free(&a);

    assert_int_equal(body_acc_start(&a, 5000, 4096, 100), 0);
    assert_true(a.cut);
    feed(&a, 5000, 33); /* the prefix ends inside a frame */
    assert_int_equal(a.got, 5000);
    expect_kept(&a, 100);
}

static void test_empty_body(void **state)
{
    (void)state;
    body_acc_t a;
    assert_int_equal(body_acc_start(&a, 0, 4096, 100), 0);
    assert_true(body_acc_complete(&a));
    size_t len = 1;
    assert_null(body_acc_take(&a, &len));
    assert_int_equal(len, 0);
}

static void test_more_than_announced_refused(void **state)
{
    (void)state;
    body_acc_t a;
    assert_int_equal(body_acc_start(&a, 10, 4096, 100), 0);
    assert_int_equal(body_acc_add(&a, "0123456", 7), 0);
    assert_int_equal(body_acc_add(&a, "7890", 4), -1);
    assert_int_equal(a.got, 7); /* the refused frame counts for nothing */
    assert_int_equal(body_acc_add(&a, "789", 3), 0);
    assert_true(body_acc_complete(&a));
    body_acc_free(&a);

    assert_int_equal(body_acc_start(&a, 5000, 4096, 100), 0); /* cut bodies too */
    feed(&a, 5000, 1000);
    assert_int_equal(body_acc_add(&a, "x", 1), -1);
    body_acc_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_within_limit_kept_whole),
        cmocka_unit_test(test_limit_itself_is_whole),
        cmocka_unit_test(test_over_limit_keeps_prefix),
        cmocka_unit_test(test_empty_body),
        cmocka_unit_test(test_more_than_announced_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
