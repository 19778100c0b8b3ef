/* The loop scaffolding: ms to timeval, pump interval, jitter bounds and seeding, graded signals,
 * SIGHUP. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "warren/backoff.h"
#include "warren/evloop.h"

static void test_tv(void **state)
{
    (void)state;
    struct timeval tv = evloop_tv(1500);
    assert_int_equal(tv.tv_sec, 1);
    assert_int_equal(tv.tv_usec, 500000);
    tv = evloop_tv(999);
    assert_int_equal(tv.tv_sec, 0);
    assert_int_equal(tv.tv_usec, 999000);
    tv = evloop_tv(86400000LL * 365);
    assert_int_equal(tv.tv_sec, 86400 * 365);
    assert_int_equal(tv.tv_usec, 0);
    /* negative: due at once, never a negative tv_usec */
    tv = evloop_tv(-250);
    assert_int_equal(tv.tv_sec, 0);
    assert_int_equal(tv.tv_usec, 0);
}

static void test_pump_interval(void **state)
{
    (void)state;
    /* heartbeats off: the cap */
    assert_int_equal(evloop_pump_interval_ms(0), EVLOOP_PUMP_MAX_MS);
    assert_int_equal(evloop_pump_interval_ms(-5), EVLOOP_PUMP_MAX_MS);
    /* a quarter of the heartbeat ... */
    assert_int_equal(evloop_pump_interval_ms(1000), 250);
    assert_int_equal(evloop_pump_interval_ms(3000), 750);
    /* ... at most 1 s ... */
    assert_int_equal(evloop_pump_interval_ms(4000), 1000);
    assert_int_equal(evloop_pump_interval_ms(30000), 1000);
    assert_int_equal(evloop_pump_interval_ms(3600000), 1000);
    /* ... at least 100 ms */
    assert_int_equal(evloop_pump_interval_ms(400), 100);
    assert_int_equal(evloop_pump_interval_ms(200), EVLOOP_PUMP_MIN_MS);
    assert_int_equal(evloop_pump_interval_ms(1), EVLOOP_PUMP_MIN_MS);
}

static long source_value;
static long fixed_source(void)
{
    return source_value;
}

static void test_jitter_bounds(void **state)
{
    (void)state;
    evloop_random_source(fixed_source);
    source_value = 0;
    assert_true(evloop_random() == 0.0);
    source_value = RAND_MAX;
    double top = evloop_random();
    assert_true(top < 1.0 && top > 0.999);
    source_value = RAND_MAX / 2;
    double mid = evloop_random();
    assert_true(mid > 0.49 && mid < 0.51);

    /* Every backoff takes its jitter from here: the delays stay in [d/2, d). */
    backoff_t b;
    backoff_init(&b, 1000, 30000);
    source_value = 0;
    assert_int_equal(backoff_next(&b, evloop_random()), 500);
    source_value = RAND_MAX;
    int64_t d = backoff_next(&b, evloop_random());
    assert_true(d >= 1000 && d < 2000);

    evloop_random_source(NULL);
    for (int i = 0; i < 10000; i++) {
        double r = evloop_random();
        assert_true(r >= 0.0 && r < 1.0);
    }
}

/* The first draw of a fresh process: this binary again, run with --draw. */
static long first_draw_in_child(void)
{
    char self[4096], cmd[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    snprintf(cmd, sizeof cmd, "'%s' --draw", self);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    long r = -1;
    assert_int_equal(fscanf(p, "%ld", &r), 1);
    assert_int_equal(pclose(p), 0);
    return r;
}

/* Two processes started together must not draw the same jitter (an unseeded random() would). */
static void test_seeded_per_process(void **state)
{
    (void)state;
    long a = first_draw_in_child(), b = first_draw_in_child();
    assert_true(a >= 0 && b >= 0);
    assert_true(a != b);
}

typedef struct seen {
    evloop_stop_t steps[8];
    const char *names[8];
    int n;
} seen_t;

static void record(void *arg, evloop_stop_t step, const char *name)
{
    seen_t *s = arg;
    s->steps[s->n] = step;
    s->names[s->n++] = name;
}

static void deliver(struct event_base *base, seen_t *seen, int sig)
{
    int before = seen->n;
    raise(sig);
    for (int i = 0; i < 100 && seen->n == before; i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
    assert_int_equal(seen->n, before + 1);
}

static void test_graded_signals(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    evloop_signals_t sig;
    seen_t seen = {.n = 0};
    assert_int_equal(evloop_signals_init(&sig, base, record, &seen), 0);
    deliver(base, &seen, SIGTERM);
    deliver(base, &seen, SIGINT);
    deliver(base, &seen, SIGTERM);
    deliver(base, &seen, SIGQUIT);
    assert_int_equal(seen.steps[0], EVLOOP_DRAIN);
    assert_string_equal(seen.names[0], "SIGTERM");
    assert_int_equal(seen.steps[1], EVLOOP_EXIT_FAST);
    assert_string_equal(seen.names[1], "SIGINT");
    assert_int_equal(seen.steps[2], EVLOOP_EXIT_FAST);
    assert_int_equal(seen.steps[3], EVLOOP_EXIT_NOW);
    assert_string_equal(seen.names[3], "SIGQUIT");
    /* SIGINT first drains too, and SIGQUIT does not count as a first signal */
    evloop_signals_t again;
    seen_t more = {.n = 0};
    evloop_base_free(base); /* removes sig's events and restores the handlers */
    base = event_base_new();
    assert_int_equal(evloop_signals_init(&again, base, record, &more), 0);
    deliver(base, &more, SIGQUIT);
    deliver(base, &more, SIGINT);
    assert_int_equal(more.steps[0], EVLOOP_EXIT_NOW);
    assert_int_equal(more.steps[1], EVLOOP_DRAIN);
    assert_string_equal(more.names[1], "SIGINT");
    evloop_base_free(base);
}

static void count_reload(void *arg)
{
    ((seen_t *)arg)->n++;
}

/* SIGHUP never ends the process: ignored until a reload function is set, then it calls it,
 * and it counts as no stop step. */
static void test_sighup_reloads(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    evloop_signals_t sig;
    seen_t seen = {.n = 0};
    assert_int_equal(evloop_signals_init(&sig, base, record, &seen), 0);
    raise(SIGHUP); /* the default action would end the test */
    for (int i = 0; i < 20; i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
    assert_int_equal(seen.n, 0);
    evloop_signals_on_reload(&sig, count_reload);
    deliver(base, &seen, SIGHUP);
    deliver(base, &seen, SIGHUP);
    assert_int_equal(seen.n, 2);
    deliver(base, &seen, SIGTERM); /* still the first stop signal: drain */
    assert_int_equal(seen.steps[2], EVLOOP_DRAIN);
    assert_string_equal(evloop_signal_name(SIGHUP), "SIGHUP");
    evloop_base_free(base);
}

static void on_nothing(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

/* Freeing the base is the whole teardown of embedded events: pending, active and signal
 * events are removed (handlers restored), and their memory can go afterwards. */
static void test_base_free_removes_embedded(void **state)
{
    (void)state;
    evloop_base_free(NULL);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct owner {
        struct event timer, every, kick, usr1;
    } *o = calloc(1, sizeof *o);
    assert_non_null(o);
    evtimer_assign(&o->timer, base, on_nothing, NULL);
    assert_int_equal(evloop_arm(&o->timer, 60000), 0);
    assert_int_equal(evloop_every(&o->every, base, 1000, on_nothing, NULL), 0);
    evtimer_assign(&o->kick, base, on_nothing, NULL);
    event_active(&o->kick, EV_TIMEOUT, 0);
    evsignal_assign(&o->usr1, base, SIGUSR1, on_nothing, NULL);
    assert_int_equal(event_add(&o->usr1, NULL), 0);
    evloop_base_free(base);
    struct sigaction sa;
    assert_int_equal(sigaction(SIGUSR1, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_DFL);
    memset(o, 0xa5, sizeof *o); /* nothing may still point into it */
    free(o);
}

/* After exit_on_next a SIGTERM ends the process in the handler itself, status EXIT_RUNTIME. */
static void test_exit_on_next(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct event_base *base = event_base_new();
        evloop_signals_t sig;
        seen_t seen = {.n = 0};
        if (!base || evloop_signals_init(&sig, base, record, &seen) != 0)
            _exit(10);
        evloop_signals_exit_on_next(&sig, "");
        raise(SIGTERM);
        _exit(11); /* not reached */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), EXIT_RUNTIME);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--draw")) {
        printf("%ld\n", (long)(evloop_random() * 2147483648.0));
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tv),
        cmocka_unit_test(test_pump_interval),
        cmocka_unit_test(test_jitter_bounds),
        cmocka_unit_test(test_seeded_per_process),
        cmocka_unit_test(test_graded_signals),
        cmocka_unit_test(test_sighup_reloads),
        cmocka_unit_test(test_exit_on_next),
        cmocka_unit_test(test_base_free_removes_embedded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
