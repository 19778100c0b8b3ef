/* Fibers: waits that yield to the loop, their deadlines, locks, conditions and cancelling. */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "warren/fiber.h"

static struct event_base *base;

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    return base ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fiber_cleanup();
    event_base_free(base);
    return 0;
}

/* Run the loop until no fiber is left (bounded). */
static void run_all(void)
{
    for (int i = 0; i < 10000 && fiber_count() > 0; i++)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(fiber_count(), 0);
}

static char trace[64];
static size_t n_trace;
static void mark(char c)
{
    if (n_trace + 1 < sizeof trace)
        trace[n_trace++] = c;
    trace[n_trace] = '\0';
}

static int pipe_fds[2];

/* Waits for the pipe: the loop (and the other fiber) runs meanwhile. */
static void reader(void *arg)
{
    (void)arg;
    assert_true(fiber_active());
    mark('r');
    int r = fiber_wait_fd(pipe_fds[0], POLLIN, now_mono_ms() + 2000);
    assert_int_equal(r, POLLIN);
    char c;
    assert_int_equal(read(pipe_fds[0], &c, 1), 1);
    mark(c);
}

static void writer(void *arg)
{
    (void)arg;
    mark('w');
    fiber_sleep_ms(20);
    assert_int_equal(write(pipe_fds[1], "x", 1), 1);
    mark('W');
}

static void test_wait_yields_to_the_loop(void **state)
{
    (void)state;
    n_trace = 0;
    assert_false(fiber_active());
    assert_int_equal(pipe(pipe_fds), 0);
    assert_int_equal(fiber_start(base, "reader", reader, NULL), 0);
    assert_int_equal(fiber_start(base, "writer", writer, NULL), 0);
    assert_int_equal(fiber_count(), 2);
    run_all();
    /* both started before either ended; the reader woke only after the write */
    assert_string_equal(trace, "rwWx");
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static void deadline(void *arg)
{
    int64_t *took = arg;
    int64_t t0 = now_mono_ms();
    assert_int_equal(fiber_wait_fd(pipe_fds[0], POLLIN, t0 + 30), 0);
    *took = now_mono_ms() - t0;
}

static void test_wait_deadline(void **state)
{
    (void)state;
    assert_int_equal(pipe(pipe_fds), 0);
    int64_t took = -1;
    assert_int_equal(fiber_start(base, "deadline", deadline, &took), 0);
    run_all();
    assert_true(took >= 25 && took < 1000);
    /* outside a fiber the same call is poll() */
    assert_int_equal(fiber_wait_fd(pipe_fds[0], POLLIN, now_mono_ms() + 5), 0);
    assert_int_equal(write(pipe_fds[1], "y", 1), 1);
    assert_int_equal(fiber_wait_fd(pipe_fds[0], POLLIN, now_mono_ms() + 1000), POLLIN);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static fiber_lock_t lock;

/* Takes the lock twice (re-entrant), holds it across a wait, marks its letter on both sides. */
static void locker(void *arg)
{
    char c = *(const char *)arg;
    assert_int_equal(fiber_lock(&lock, now_mono_ms() + 2000), 1);
    assert_int_equal(fiber_lock(&lock, now_mono_ms() + 2000), 1);
    assert_true(fiber_lock_mine(&lock));
    mark(c);
    fiber_sleep_ms(5);
    mark(c);
    fiber_unlock(&lock);
    assert_true(fiber_lock_mine(&lock));
    fiber_unlock(&lock);
}

static void test_lock_in_turn(void **state)
{
    (void)state;
    n_trace = 0;
    memset(&lock, 0, sizeof lock);
    static const char a = 'a', b = 'b', c = 'c';
    assert_int_equal(fiber_start(base, "a", locker, (void *)&a), 0);
    assert_int_equal(fiber_start(base, "b", locker, (void *)&b), 0);
    assert_int_equal(fiber_start(base, "c", locker, (void *)&c), 0);
    run_all();
    /* never interleaved, first come first served */
    assert_string_equal(trace, "aabbcc");
    assert_false(fiber_lock_held(&lock));
    /* outside a fiber: taken only while free */
    assert_int_equal(fiber_lock(&lock, 0), 1);
    fiber_unlock(&lock);
}

static void holder(void *arg)
{
    (void)arg;
    assert_int_equal(fiber_lock(&lock, now_mono_ms() + 2000), 1);
    fiber_sleep_ms(200);
    fiber_unlock(&lock);
}

static void impatient(void *arg)
{
    int *got = arg;
    *got = fiber_lock(&lock, now_mono_ms() + 20);
}

static void test_lock_deadline(void **state)
{
    (void)state;
    memset(&lock, 0, sizeof lock);
    int got = -1;
    assert_int_equal(fiber_start(base, "holder", holder, NULL), 0);
    assert_int_equal(fiber_start(base, "impatient", impatient, &got), 0);
    run_all();
    assert_int_equal(got, 0);
    assert_false(fiber_lock_held(&lock)); /* the timed-out waiter is not left queued */
}

static fiber_cond_t cond;

static void cond_waiter(void *arg)
{
    int *got = arg;
    *got = fiber_cond_wait(&cond, now_mono_ms() + 2000);
}

static void signaller(void *arg)
{
    (void)arg;
    fiber_sleep_ms(10);
    assert_int_equal(fiber_cond_waiters(&cond), 2);
    fiber_cond_signal(&cond);
    fiber_cond_signal(&cond);
}

static void test_cond(void **state)
{
    (void)state;
    memset(&cond, 0, sizeof cond);
    int got[2] = {-1, -1};
    assert_int_equal(fiber_start(base, "w1", cond_waiter, &got[0]), 0);
    assert_int_equal(fiber_start(base, "w2", cond_waiter, &got[1]), 0);
    assert_int_equal(fiber_start(base, "s", signaller, NULL), 0);
    run_all();
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 1);
    assert_int_equal(fiber_cond_waiters(&cond), 0);
}

static void sleeper(void *arg)
{
    int *got = arg;
    *got = fiber_wait_fd(pipe_fds[0], POLLIN, INT64_MAX); /* nothing ever comes */
}

static void cancel_soon(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    fiber_cancel_all();
}

/* Runs last: cancelling is for the end of a process. */
static void test_cancel_all(void **state)
{
    (void)state;
    assert_int_equal(pipe(pipe_fds), 0);
    int got = 7;
    assert_int_equal(fiber_start(base, "sleeper", sleeper, &got), 0);
    struct timeval tv = {0, 20000};
    assert_int_equal(event_base_once(base, -1, EV_TIMEOUT, cancel_soon, NULL, &tv), 0);
    run_all();
    assert_int_equal(got, -1);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_yields_to_the_loop),
        cmocka_unit_test(test_wait_deadline),
        cmocka_unit_test(test_lock_in_turn),
        cmocka_unit_test(test_lock_deadline),
        cmocka_unit_test(test_cond),
        cmocka_unit_test(test_cancel_all),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
