/* Tests for the handler runner with real processes on a real event loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "warren/log.h"
#include "warren/utf8.h"
#include "worker/inproc.h"
#include "worker/runner.h"

#define SOURCE_HANDLERS WARREN_SOURCE_DIR "/handlers"

/*
 * A copy of one result, made inside done_cb. Time is never asserted against a fixed window (a
 * loaded machine or a sanitizer build stretches it): a duration is checked against what the test
 * itself measured around the run (waited_ms), and "promptly" means before a generous deadline
 * that is still far shorter than what a wrong runner would wait for (a handler's sleep 1000).
 */
typedef struct got {
    bool done;
    int64_t execution_id;
    runner_outcome_t outcome;
    int exit_code, signal;
    char *result, *tail, *error;
    bool truncated;
    int64_t duration_ms;
    int64_t waited_ms; /* set by run_one: from before the start to after the result */
} got_t;

typedef struct fixture {
    struct event_base *base;
    runner_t *runner;
    char dir[64]; /* scratch handlers directory */
    size_t ndone;
    int fds_before; /* open descriptors before the test: none may leak */
} fixture_t;

static fixture_t *current;

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void on_done(const runner_result_t *res, void *arg)
{
    got_t *g = arg;
    assert_false(g->done);
    *g = (got_t){
        .done = true,
        .execution_id = res->execution_id,
        .outcome = res->outcome,
        .exit_code = res->exit_code,
        .signal = res->signal,
        .result = dup_or_null(res->result_json),
        .tail = dup_or_null(res->stderr_tail),
        .error = dup_or_null(res->error),
        .truncated = res->truncated,
        .duration_ms = res->duration_ms,
    };
    current->ndone++;
}

static void got_free(got_t *g)
{
    free(g->result);
    free(g->tail);
    free(g->error);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n++;
    return n;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->fds_before = count_fds();
    f->base = event_base_new();
    snprintf(f->dir, sizeof f->dir, "/tmp/warren-runner-XXXXXX");
    if (!f->base || !mkdtemp(f->dir))
        return -1;
    current = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    runner_free(f->runner);
    event_base_free(f->base);
    nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    int leaked = count_fds() - f->fds_before;
    free(f);
    assert_int_equal(leaked, 0);
    return 0;
}

static runner_opts_t default_opts(const char *dir)
{
    return (runner_opts_t){.handlers_dir = dir,
                           .max_output_bytes = 1 << 20,
                           .stderr_tail_bytes = 4096,
                           .kill_grace_s = 1,
                           .default_timeout_s = 10};
}

static void make_runner(fixture_t *f, const runner_opts_t *opts)
{
    char err[ERRBUF_SIZE];
    f->runner = runner_new(f->base, opts, err, sizeof err);
    if (!f->runner)
        fail_msg("runner_new: %s", err);
}

/* Write an executable handler script into the scratch directory. */
static void write_handler(fixture_t *f, const char *name, const char *body)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fprintf(out, "#!/bin/sh\n%s\n", body);
    fclose(out);
    assert_int_equal(chmod(path, 0755), 0);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    *(bool *)arg = true;
}

/* Run the loop until n results arrived or timeout_ms passed (n SIZE_MAX: for timeout_ms). */
static void run_until(fixture_t *f, size_t n, int timeout_ms)
{
    bool expired = false;
    struct event *deadline = evtimer_new(f->base, on_deadline, &expired);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(deadline, &tv);
    while (f->ndone < n && !expired)
        event_base_loop(f->base, EVLOOP_ONCE);
    event_free(deadline);
}

static void start(fixture_t *f, int64_t id, const char *ref, const char *params, int timeout_s,
                  got_t *g)
{
    runner_spec_t spec = {.execution_id = id,
                          .action_ref = ref,
                          .params_json = params,
                          .params_len = params ? strlen(params) : 0,
                          .attempt = 1,
                          .timeout_s = timeout_s};
    char err[ERRBUF_SIZE];
    memset(g, 0, sizeof *g);
    assert_int_equal(runner_start(f->runner, &spec, on_done, g, err, sizeof err), 0);
}

/* Run the loop until cond(arg) holds, at most deadline_ms; whether it holds. */
static bool loop_until(fixture_t *f, bool (*cond)(void *), void *arg, int deadline_ms)
{
    int64_t end = now_mono_ms() + deadline_ms;
    while (!cond(arg)) {
        if (now_mono_ms() >= end)
            return false;
        run_until(f, SIZE_MAX, 20);
    }
    return true;
}

/* Start one job and wait for its result (at most 10 s). */
static void run_one(fixture_t *f, const char *ref, const char *params, int timeout_s, got_t *g)
{
    size_t before = f->ndone;
    int64_t t0 = now_mono_ms();
    start(f, 42, ref, params, timeout_s, g);
    assert_false(g->done); /* never from inside runner_start */
    run_until(f, before + 1, 10000);
    assert_true(g->done);
    g->waited_ms = now_mono_ms() - t0;
    assert_int_equal(g->execution_id, 42);
}

static void assert_json_equal(const char *got, const char *want)
{
    json_object *a = json_tokener_parse(got), *b = json_tokener_parse(want);
    if (!a || !b || !json_object_equal(a, b))
        fail_msg("JSON differs: got %s, want %s", got ? got : "(null)", want);
    json_object_put(a);
    json_object_put(b);
}

/* A process is gone when it no longer exists or is a zombie waiting for init (waits up to 10 s
 * for that). */
static bool process_gone(pid_t pid)
{
    for (int64_t deadline = now_mono_ms() + 10000; now_mono_ms() < deadline;) {
        if (kill(pid, 0) < 0 && errno == ESRCH)
            return true;
        char path[64], stat[256] = "";
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *in = fopen(path, "r");
        if (in) {
            if (!fgets(stat, sizeof stat, in))
                stat[0] = '\0';
            fclose(in);
        }
        char *end = strrchr(stat, ')');
        if (end && end[1] == ' ' && end[2] == 'Z')
            return true;
        usleep(20000);
    }
    return false;
}

static pid_t read_pid(const char *path)
{
    FILE *in = fopen(path, "r");
    int pid = 0;
    if (in) {
        if (fscanf(in, "%d", &pid) != 1)
            pid = 0;
        fclose(in);
    }
    return (pid_t)pid;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_echo_returns_params(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(SOURCE_HANDLERS);
    make_runner(f, &o);
    got_t g;
    const char *params = "{\"a\": 1, \"b\": [\"x y\", null], \"c\": {\"d\": \"\xC3\xA9\"}}";
    run_one(f, "core.echo", params, 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_int_equal(g.exit_code, 0);
    assert_int_equal(g.signal, 0);
    assert_json_equal(g.result, params);
    assert_string_equal(g.tail, "");
    assert_null(g.error);
    assert_false(g.truncated);
    assert_true(g.duration_ms >= 0 && g.duration_ms <= g.waited_ms);
    assert_int_equal(runner_running(f->runner), 0);
    got_free(&g);
}

static void test_real_handlers(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(SOURCE_HANDLERS);
    make_runner(f, &o);
    got_t g;
    run_one(f, "core.sleep", "{\"seconds\": 0.1}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, "{\"slept\": 0.1}");
    assert_true(g.duration_ms >= 100);
    got_free(&g);

    run_one(f, "core.fail", "{\"code\": 3}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_FAILED);
    assert_int_equal(g.exit_code, 3);
    assert_string_equal(g.error, "handler exited with code 3");
    assert_non_null(strstr(g.tail, "failing on purpose with exit code 3 (execution 42)"));
    assert_null(g.result); /* it printed nothing on stdout */
    got_free(&g);

    json_object *list = runner_handlers(f->runner);
    assert_string_equal(json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN),
                        "[\"core.echo\",\"core.fail\",\"core.noop\",\"core.sleep\"]");
    json_object_put(list);
}

static void test_non_json_output_kept_as_text(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_handler(f, "t.text", "cat >/dev/null; printf 'hello \"world\"\\nbye\\n'");
    got_t g;
    run_one(f, "t.text", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_string_equal(g.result, "{\"output\":\"hello \\\"world\\\"\\nbye\"}");
    got_free(&g);
}

static void test_environment_is_minimal(void **state)
{
    fixture_t *f = *state;
    setenv("WARREN__DATABASE__URL", "postgres://u:sekrit@h/db", 1);
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_handler(f, "t.env", "env; echo end");
    runner_spec_t spec = {
        .execution_id = 9000000000LL, .action_ref = "t.env", .attempt = 3, .timeout_s = 7};
    got_t g = {0};
    char err[ERRBUF_SIZE];
    assert_int_equal(runner_start(f->runner, &spec, on_done, &g, err, sizeof err), 0);
    run_until(f, 1, 5000);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_non_null(strstr(g.result, "WARREN_EXECUTION_ID=9000000000\\n"));
    assert_non_null(strstr(g.result, "WARREN_ACTION_REF=t.env\\n"));
    assert_non_null(strstr(g.result, "WARREN_ATTEMPT=3\\n"));
    assert_non_null(strstr(g.result, "WARREN_TIMEOUT_S=7"));
    assert_non_null(strstr(g.result, "PATH=/usr/local/bin:/usr/bin:/bin"));
    assert_null(strstr(g.result, "sekrit"));
    assert_null(strstr(g.result, "WARREN__"));
    unsetenv("WARREN__DATABASE__URL");
    got_free(&g);
}

static void test_failure_keeps_stderr_tail(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    o.stderr_tail_bytes = 64;
    make_runner(f, &o);
    write_handler(f, "t.noisy",
                  "i=0; while [ $i -lt 500 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done\n"
                  "echo '{\"partial\": true}'; echo 'the real reason' >&2; exit 5");
    got_t g;
    run_one(f, "t.noisy", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_FAILED);
    assert_int_equal(g.exit_code, 5);
    assert_true(strlen(g.tail) <= 64);
    size_t n = strlen(g.tail);
    assert_true(n > 16);
    assert_string_equal(g.tail + n - 16, "the real reason\n");
    assert_json_equal(g.result, "{\"partial\": true}"); /* stdout of a failure is kept too */
    got_free(&g);
}

static void test_output_cap(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    o.max_output_bytes = 1000;
    make_runner(f, &o);
    /* 300 KB: far past the cap and the pipe buffer, so the handler only finishes if the
     * runner keeps reading and dropping. */
    write_handler(f, "t.flood", "head -c 300000 /dev/zero | tr '\\0' a; echo done >&2");
    got_t g;
    run_one(f, "t.flood", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_true(g.truncated);
    json_object *r = json_tokener_parse(g.result), *out, *trunc;
    assert_true(json_object_object_get_ex(r, "output", &out));
    assert_int_equal(json_object_get_string_len(out), 1000);
    assert_true(json_object_object_get_ex(r, "truncated", &trunc));
    assert_true(json_object_get_boolean(trunc));
    assert_string_equal(g.tail, "done\n");
    json_object_put(r);
    got_free(&g);
}

static void test_killed_by_signal(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_handler(f, "t.crash", "kill -SEGV $$");
    got_t g;
    run_one(f, "t.crash", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_FAILED);
    assert_int_equal(g.signal, SIGSEGV);
    assert_int_equal(g.exit_code, -1);
    assert_non_null(strstr(g.error, "killed by signal 11"));
    got_free(&g);
}

/*
 * Run handler `name` whose script finds in $pidfile where to record a process id to watch;
 * returns that id once the result is in.
 */
static void write_recorder(fixture_t *f, const char *name, const char *script, char *pidfile,
                           size_t len)
{
    char body[512];
    snprintf(pidfile, len, "%s/%s.pid", f->dir, name);
    snprintf(body, sizeof body, "pidfile=%s\n%s", pidfile, script);
    write_handler(f, name, body);
}

static pid_t run_recording_pid(fixture_t *f, const char *name, const char *script, int timeout_s,
                               got_t *g)
{
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    char pidfile[128];
    write_recorder(f, name, script, pidfile, sizeof pidfile);
    run_one(f, name, "{}", timeout_s, g);
    return read_pid(pidfile);
}

/* Start the same kind of handler (on the runner made already) as execution id, and return the
 * recorded id once it is there: meanwhile the loop runs, or (run_loop false) it does not, so the
 * handler's end stays unseen. The script writes the file whole (mv), never half. */
static pid_t start_recording_pid(fixture_t *f, int64_t id, const char *name, const char *script,
                                 bool run_loop, got_t *g)
{
    char pidfile[128];
    write_recorder(f, name, script, pidfile, sizeof pidfile);
    start(f, id, name, "{}", 0, g);
    for (int i = 0; i < 250 && read_pid(pidfile) == 0; i++) {
        if (run_loop)
            run_until(f, f->ndone + 1, 20);
        else
            usleep(20000);
    }
    return read_pid(pidfile);
}

/* A timed-out handler ended by sig no sooner than min_ms, and its grandchild with it. That the
 * result came at all (within run_one's deadline) shows the handler's sleep 1000 was cut short. */
static void assert_timed_out(got_t *g, pid_t grandchild, int sig, int64_t min_ms)
{
    assert_int_equal(g->outcome, RUNNER_TIMEOUT);
    assert_string_equal(runner_outcome_name(g->outcome), "timeout");
    assert_string_equal(g->error, "timed out after 1 s");
    assert_int_equal(g->signal, sig);
    /* The loop's timers run on libevent's cached time, which can lag the monotonic clock by a
     * few milliseconds: a timer may fire that much before min_ms as the runner measures it. */
    assert_true(g->duration_ms >= min_ms - 20 && g->duration_ms <= g->waited_ms);
    assert_true(grandchild > 0);
    assert_true(process_gone(grandchild));
    got_free(g);
}

/* The timeout kills the handler's whole group: a grandchild must not survive. */
static void test_timeout_kills_group(void **state)
{
    got_t g;
    pid_t grandchild = run_recording_pid(*state, "t.hang", "sleep 1000 &\necho $! > $pidfile\nwait",
                                         1, &g);
    assert_timed_out(&g, grandchild, SIGTERM, 1000);
}

/* A handler that ignores SIGTERM gets SIGKILL after kill_grace_s. */
static void test_timeout_escalates_to_sigkill(void **state)
{
    got_t g;
    pid_t grandchild = run_recording_pid(
        *state, "t.stubborn", "trap '' TERM\nsleep 1000 &\necho $! > $pidfile\nwait\nwait", 1, &g);
    assert_timed_out(&g, grandchild, SIGKILL, 2000); /* timeout 1 s + kill_grace_s 1 */
}

/* What a handler leaves running when it exits is killed, and does not delay the result: the
 * leftover holds the handler's stdout open for 1000 s, and the result comes within run_one's
 * deadline all the same. */
static void test_leftovers_killed_on_exit(void **state)
{
    got_t g;
    pid_t leftover = run_recording_pid(
        *state, "t.leave", "sleep 1000 &\necho $! > $pidfile\necho '{\"ok\": true}'", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, "{\"ok\": true}");
    assert_true(g.duration_ms <= g.waited_ms);
    assert_true(leftover > 0);
    assert_true(process_gone(leftover));
    got_free(&g);
}

/* A worker that inherits orphans (PID 1 in a container; a subreaper here) reaps them: what a
 * handler left behind, killed with its group, is not left a zombie, and is counted. */
static void test_orphans_reaped(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    got_t g;
    pid_t leftover = run_recording_pid(f, "t.leave", "sleep 1000 &\necho $! > $pidfile\necho '{}'",
                                       0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_true(leftover > 0);
    for (int i = 0; i < 250 && runner_orphans_reaped(f->runner) == 0; i++)
        run_until(f, f->ndone + 1, 20);
    (void)prctl(PR_SET_CHILD_SUBREAPER, 0);
    assert_int_equal(runner_orphans_reaped(f->runner), 1);
    assert_int_equal(kill(leftover, 0), -1); /* not even a zombie */
    assert_int_equal(errno, ESRCH);
    got_free(&g);
}

static void test_shell_metacharacters_stay_data(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(SOURCE_HANDLERS);
    make_runner(f, &o);
    char mark[128], params[1024], ref[256];
    snprintf(mark, sizeof mark, "%s/pwned", f->dir);
    snprintf(params, sizeof params,
             "{\"x\": \"$(touch %s); `touch %s`; touch %s | touch %s && touch %s\", "
             "\"y\": \"'; touch %s; '\"}",
             mark, mark, mark, mark, mark, mark);
    got_t g;
    run_one(f, "core.echo", params, 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, params);
    got_free(&g);

    snprintf(ref, sizeof ref, "core.echo; touch %s", mark);
    const char *refs[] = {ref, "../../bin/sh", "$(touch x)", "core.echo\n"};
    for (size_t i = 0; i < 4; i++) {
        run_one(f, refs[i], "{}", 0, &g);
        assert_int_equal(g.outcome, RUNNER_FAILED);
        assert_non_null(strstr(g.error, "invalid action_ref"));
        got_free(&g);
    }
    assert_int_equal(access(mark, F_OK), -1);
}

static void test_missing_handler(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(SOURCE_HANDLERS);
    make_runner(f, &o);
    assert_false(runner_has_handler(f->runner, "no.such"));
    assert_false(runner_has_handler(f->runner, "README.md")); /* not executable */
    assert_true(runner_has_handler(f->runner, "core.echo"));
    assert_true(runner_has_handler(f->runner, "core.noop"));
    got_t g;
    run_one(f, "no.such", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_FAILED);
    assert_int_equal(g.exit_code, -1);
    assert_string_equal(g.error, "no handler for action 'no.such' (no executable " SOURCE_HANDLERS
                                 "/no.such)");
    got_free(&g);
}

/* An error text longer than its buffer is cut on a character boundary: the completion that
 * carries it must be valid UTF-8, or the executor can never store it. Two lengths of the
 * directory's name, so one of them puts the cut inside a two-byte character. */
static void test_long_error_text_stays_utf8(void **state)
{
    fixture_t *f = *state;
    for (int odd = 0; odd < 2; odd++) {
        char dir[1024], part[256] = "";
        for (int i = 0; i < 125; i++)
            strcat(part, "\xC3\xA9"); /* é */
        snprintf(dir, sizeof dir, "%s/%s", f->dir, odd ? "a" : "");
        if (odd)
            assert_int_equal(mkdir(dir, 0755), 0);
        for (int level = 0; level < 2; level++) {
            strcat(strcat(dir, "/"), part);
            assert_int_equal(mkdir(dir, 0755), 0);
        }
        runner_opts_t o = default_opts(dir);
        make_runner(f, &o);
        got_t g;
        run_one(f, "no.such", "{}", 0, &g);
        assert_int_equal(g.outcome, RUNNER_FAILED);
        assert_non_null(strstr(g.error, "no handler for action 'no.such'"));
        if (!utf8_valid(g.error, strlen(g.error), NULL))
            fail_msg("error text is not UTF-8: %s", g.error);
        got_free(&g);
        runner_free(f->runner);
        f->runner = NULL;
    }
}

/* A handlers directory others can write is refused at start: whoever can add a file there
 * decides what the worker runs. */
static void test_writable_dir_refused(void **state)
{
    fixture_t *f = *state;
    const mode_t modes[] = {0775, 0757, 01777};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        assert_int_equal(chmod(f->dir, modes[i]), 0);
        runner_opts_t o = default_opts(f->dir);
        char err[ERRBUF_SIZE] = "";
        assert_null(runner_new(f->base, &o, err, sizeof err));
        assert_non_null(strstr(err, "is writable by its group or others"));
    }
    assert_int_equal(chmod(f->dir, 0755), 0);
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
}

/* Eight handlers run at once: each waits until all eight have started (a barrier of marker
 * files), which one after the other could never pass before the deadline. */
static void test_concurrent_runs(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_handler(
        f, "t.slow",
        "read -r params; dir=$(dirname \"$0\"); touch \"$dir/started.$WARREN_EXECUTION_ID\"\n"
        "while [ \"$(ls \"$dir\" | grep -c '^started\\.')\" -lt 8 ]; do sleep 0.05; done\n"
        "echo \"{\\\"id\\\": $WARREN_EXECUTION_ID, \\\"params\\\": $params}\"");
    enum { N = 8 };
    got_t g[N];
    for (int i = 0; i < N; i++) {
        char params[32];
        snprintf(params, sizeof params, "{\"n\": %d}", i);
        start(f, 100 + i, "t.slow", params, 0, &g[i]);
    }
    assert_int_equal(runner_running(f->runner), N);
    run_until(f, N, 10000);
    assert_int_equal(runner_running(f->runner), 0);
    for (int i = 0; i < N; i++) {
        char want[64];
        snprintf(want, sizeof want, "{\"id\": %d, \"params\": {\"n\": %d}}", 100 + i, i);
        assert_true(g[i].done);
        assert_int_equal(g[i].execution_id, 100 + i);
        assert_int_equal(g[i].outcome, RUNNER_COMPLETED);
        assert_json_equal(g[i].result, want);
        got_free(&g[i]);
    }
}

static void test_large_params_and_unread_stdin(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_handler(f, "t.cat", "exec cat");
    write_handler(f, "t.deaf", "exec 0<&-; echo '{\"heard\": false}'"); /* closes stdin */
    size_t n = 512 * 1024;
    char *params = malloc(n + 16);
    memcpy(params, "[\"", 2);
    memset(params + 2, 'p', n);
    memcpy(params + 2 + n, "\"]", 3);
    got_t g;
    run_one(f, "t.cat", params, 0, &g); /* eight pipe buffers: written as the handler reads */
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_string_equal(g.result, params);
    got_free(&g);
    run_one(f, "t.deaf", params, 0, &g); /* EPIPE must neither kill nor fail the worker */
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, "{\"heard\": false}");
    got_free(&g);
    free(params);
}

/* Descriptors the worker opened without O_CLOEXEC (a broker socket) stay out of handlers. */
static void test_descriptors_not_inherited(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    int fd = open("/dev/null", O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(dup2(fd, 77), 77);
    write_handler(f, "t.fds", "exec ls /proc/self/fd"); /* ls's own directory fd is 3 */
    got_t g;
    run_one(f, "t.fds", "{}", 0, &g);
    close(77);
    close(fd);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_string_equal(g.result, "{\"output\":\"0\\n1\\n2\\n3\"}");
    got_free(&g);
}

/* The handler starts with nothing blocked or ignored (the worker ignores SIGPIPE, and blocks
 * every signal while it starts a handler). */
static void test_signal_state_is_clean(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_handler(f, "t.sig", "exec grep -E '^Sig(Blk|Ign)' /proc/self/status");
    got_t g;
    run_one(f, "t.sig", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_string_equal(g.result,
                        "{\"output\":\"SigBlk:\\t0000000000000000\\nSigIgn:\\t0000000000000000\"}");
    got_free(&g);
}

/* An executable the kernel cannot run fails with the exec's reason, and leaves no process. */
static void test_exec_failure(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    char path[128];
    snprintf(path, sizeof path, "%s/t.badinterp", f->dir);
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs("#!/nonexistent/interpreter\n", out);
    fclose(out);
    assert_int_equal(chmod(path, 0755), 0);
    got_t g;
    run_one(f, "t.badinterp", "{}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_FAILED);
    assert_int_equal(g.exit_code, -1);
    assert_non_null(strstr(g.error, "cannot start handler"));
    assert_non_null(strstr(g.error, "No such file or directory"));
    assert_true(waitpid(-1, NULL, WNOHANG) <= 0); /* reaped, no zombie left */
    got_free(&g);
}

/* pidfile holds a process id (written whole: the handler writes it aside, then renames it). */
static bool pidfile_written(void *pidfile)
{
    return read_pid(pidfile) > 0;
}

/* A handler that records its pid in <dir>/NAME.<execution id>.pid, then sleeps 1000 s. */
static void write_sleeper(fixture_t *f, const char *name)
{
    char body[512];
    snprintf(body, sizeof body,
             "p=%s/%s.$WARREN_EXECUTION_ID.pid; echo $$ > $p.tmp && mv $p.tmp $p\n"
             "exec sleep 1000",
             f->dir, name);
    write_handler(f, name, body);
}

/* Terminated handlers are reported promptly: both results come within the deadline, long
 * before their sleep would end. */
static void test_terminate_all(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    write_sleeper(f, "t.sleeper");
    got_t a, b;
    start(f, 1, "t.sleeper", "{}", 0, &a);
    start(f, 2, "t.sleeper", "{}", 0, &b);
    char pid_a[128], pid_b[128];
    snprintf(pid_a, sizeof pid_a, "%s/t.sleeper.1.pid", f->dir);
    snprintf(pid_b, sizeof pid_b, "%s/t.sleeper.2.pid", f->dir);
    assert_true(loop_until(f, pidfile_written, pid_a, 10000)); /* both are running */
    assert_true(loop_until(f, pidfile_written, pid_b, 10000));
    runner_terminate_all(f->runner);
    run_until(f, 2, 10000);
    assert_true(a.done && b.done);
    assert_int_equal(a.outcome, RUNNER_FAILED);
    assert_string_equal(a.error, "terminated: worker shutting down");
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(b.outcome, RUNNER_FAILED);
    got_free(&a);
    got_free(&b);
}

/* runner_free kills and reaps what still runs, without calling done_cb. */
static void test_free_kills_running(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    got_t g;
    pid_t pid = start_recording_pid(
        f, 1, "t.forever", "echo $$ > $pidfile.tmp && mv $pidfile.tmp $pidfile\nexec sleep 1000",
        true, &g);
    assert_true(pid > 0);
    runner_free(f->runner);
    f->runner = NULL;
    assert_false(g.done);
    assert_int_equal(kill(pid, 0), -1); /* reaped by runner_free: no zombie either */
    assert_int_equal(errno, ESRCH);
}

static void test_noop_inprocess(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    got_t g;
    run_one(f, "core.noop", "{\"ignored\": true}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_string_equal(g.result, "{}");
    assert_int_equal(g.exit_code, 0);
    got_free(&g);
}

/* Put a module of the build (BUILD/subdir/name.so: handlers/example_upper.c, or a test module
 * from tests/handlers/) into the scratch handlers directory. */
static void link_module(fixture_t *f, const char *subdir, const char *name)
{
    char exe[4096] = "", so[4096], link[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    snprintf(so, sizeof so, "%s/%s/%s.so", dirname(exe), subdir, name);
    if (access(so, R_OK) != 0)
        fail_msg("%s missing: build all targets before running the tests", so);
    snprintf(link, sizeof link, "%s/%s.so", f->dir, name);
    assert_int_equal(symlink(so, link), 0);
}

static void link_example_module(fixture_t *f)
{
    link_module(f, "handlers", "example_upper");
}

/* The example module, loaded through dlopen. */
static void test_example_module(void **state)
{
    fixture_t *f = *state;
    link_example_module(f);
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    assert_true(runner_has_handler(f->runner, "example.upper"));
    json_object *list = runner_handlers(f->runner);
    assert_string_equal(json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN),
                        "[\"core.noop\",\"example.upper\"]");
    json_object_put(list);
    got_t g;
    run_one(f, "example.upper", "{\"text\": \"abc\\n\\u00e9\", \"n\": 1, \"ok\": true}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, "{\"TEXT\": \"ABC\\n\\u00e9\", \"N\": 1, \"OK\": true}");
    got_free(&g);
}

/* The output cap holds for in-process results too. */
static void test_module_output_cap(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    o.max_output_bytes = 8;
    link_example_module(f);
    make_runner(f, &o);
    got_t g;
    run_one(f, "example.upper", "[\"abcdefghijkl\"]", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_true(g.truncated);
    assert_string_equal(g.result, "{\"output\":\"[\\\"ABCDEF\",\"truncated\":true}");
    got_free(&g);
}

/* ---- in-process handlers of ABI version 2, and cancelling ------------------------------------ */

/* A runner whose handlers directory holds the test modules (tests/handlers/) and t.* scripts. */
static void make_test_module_runner(fixture_t *f, int kill_grace_s)
{
    link_module(f, "tests/handlers", "test_wait");
    link_module(f, "tests/handlers", "test_v1");
    runner_opts_t o = default_opts(f->dir);
    o.kill_grace_s = kill_grace_s;
    make_runner(f, &o);
}

static void assert_json_field(const char *json, const char *key, const char *want)
{
    json_object *o = json_tokener_parse(json), *v;
    if (!o || !json_object_object_get_ex(o, key, &v))
        fail_msg("no %s in %s", key, json ? json : "(null)");
    assert_string_equal(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), want);
    json_object_put(o);
}

/* Version 1 modules still load and run inline. */
static void test_v1_module_inline(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t g;
    run_one(f, "test.v1", "{\"x\": [1, 2]}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, "{\"abi\": 1, \"params\": {\"x\": [1, 2]}}");
    got_free(&g);
}

/* A version 2 handler runs on its thread and sees its execution, timeout and deadline. */
static void test_v2_module_thread(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t g;
    run_one(f, "test.wait", "{\"seconds\": 0.05}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_null(g.error);
    assert_json_equal(g.result, "{\"waited\": true, \"stop\": 0, \"execution_id\": 42, "
                                "\"attempt\": 1, \"timeout_s\": 10, \"deadline\": true}");
    assert_true(g.duration_ms >= 40 && g.duration_ms < 2000);
    got_free(&g);

    run_one(f, "test.wait", "{\"seconds\": 0, \"fail\": 3}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_FAILED);
    assert_int_equal(g.exit_code, 3);
    assert_string_equal(g.error, "test.wait: failing with 3 as asked");
    assert_json_field(g.result, "waited", "true");
    got_free(&g);
}

/* Threads run side by side: eight waits of 0.5 s take about 0.5 s. */
static void test_v2_concurrent(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    enum { N = 8 };
    got_t g[N];
    int64_t t0 = now_mono_ms();
    for (int i = 0; i < N; i++)
        start(f, 200 + i, "test.wait", "{\"seconds\": 0.5}", 0, &g[i]);
    run_until(f, N, 10000);
    assert_true(now_mono_ms() - t0 < 3000);
    for (int i = 0; i < N; i++) {
        assert_int_equal(g[i].outcome, RUNNER_COMPLETED);
        char id[32];
        snprintf(id, sizeof id, "%d", 200 + i);
        assert_json_field(g[i].result, "execution_id", id);
        got_free(&g[i]);
    }
}

/* Past its timeout the handler is asked to stop; wait() returns at once. */
static void test_v2_timeout(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t g;
    run_one(f, "test.wait", "{\"seconds\": 30}", 1, &g);
    assert_int_equal(g.outcome, RUNNER_TIMEOUT);
    assert_string_equal(g.error, "timed out after 1 s");
    assert_int_equal(g.exit_code, 0); /* what run() returned */
    assert_json_field(g.result, "stop", "2");
    assert_json_field(g.result, "timeout_s", "1");
    assert_true(g.duration_ms >= 950 && g.duration_ms < 2000);
    got_free(&g);
}

static void test_v2_cancel(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t g;
    start(f, 7, "test.wait", "{\"seconds\": 30}", 0, &g);
    run_until(f, 1, 100);
    assert_false(g.done);
    assert_int_equal(runner_cancel(f->runner, 7, 2), RUNNER_CANCEL_UNKNOWN); /* other attempt */
    assert_int_equal(runner_cancel(f->runner, 7, 1), RUNNER_CANCEL_STOPPING);
    assert_int_equal(runner_cancel(f->runner, 7, 1), RUNNER_CANCEL_REPEATED);
    run_until(f, 1, 5000);
    assert_true(g.done);
    assert_int_equal(g.outcome, RUNNER_CANCELLED);
    assert_string_equal(runner_outcome_name(g.outcome), "cancelled");
    assert_string_equal(g.error, "Cancelled by request");
    assert_json_field(g.result, "stop", "1");
    assert_true(g.duration_ms < 1000);
    assert_int_equal(runner_cancel(f->runner, 7, 1), RUNNER_CANCEL_UNKNOWN); /* reported */
    got_free(&g);
}

/* A handler that does not return kill_grace_s after the stop request is abandoned: its execution
 * ends anyway, and its thread frees itself when run() returns at last. */
static void test_v2_abandoned(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t g;
    start(f, 8, "test.wait", "{\"seconds\": 2.5, \"ignore_stop\": true}", 0, &g);
    run_until(f, 1, 100);
    assert_int_equal(runner_cancel(f->runner, 8, 1), RUNNER_CANCEL_STOPPING);
    run_until(f, 1, 5000);
    assert_int_equal(g.outcome, RUNNER_CANCELLED);
    assert_int_equal(g.exit_code, -1);
    assert_string_equal(g.error, "Cancelled by request; the in-process handler did not return "
                                 "within 1 s and was abandoned");
    assert_null(g.result);
    assert_true(g.duration_ms >= 1000 && g.duration_ms < 2000);
    assert_int_equal(runner_running(f->runner), 0);
    assert_int_equal(inproc_abandoned(), 1);
    for (int i = 0; i < 300 && inproc_abandoned() > 0; i++)
        usleep(10000);
    assert_int_equal(inproc_abandoned(), 0);
    got_free(&g);
}

static void test_v2_terminate_and_free(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t a, b;
    start(f, 1, "test.wait", "{\"seconds\": 30}", 0, &a);
    run_until(f, 1, 100);
    runner_terminate_all(f->runner);
    run_until(f, 1, 5000);
    assert_int_equal(a.outcome, RUNNER_FAILED);
    assert_string_equal(a.error, "terminated: worker shutting down");
    assert_json_field(a.result, "stop", "3");
    got_free(&a);
    /* runner_free with a thread running: asked to stop, never reported. */
    start(f, 2, "test.wait", "{\"seconds\": 30}", 0, &b);
    run_until(f, 2, 100);
    runner_free(f->runner);
    f->runner = NULL;
    assert_false(b.done);
    for (int i = 0; i < 300 && inproc_abandoned() > 0; i++)
        usleep(10000);
    assert_int_equal(inproc_abandoned(), 0);
}

/* A process a version 2 handler starts on its own thread is its own to wait for: the runner's
 * reaping (waitpid(-1) for orphans) must not take its status, even while the loop handles the
 * SIGCHLD of its exit. */
static void test_v2_handler_child_not_reaped(void **state)
{
    fixture_t *f = *state;
    make_test_module_runner(f, 1);
    got_t g;
    run_one(f, "test.wait", "{\"seconds\": 0.5, \"child_exit\": 7}", 0, &g);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_field(g.result, "child", "7");
    got_free(&g);
}

/* Cancelling an executable handler stops its whole group at once. */
static void test_cancel_exec_group(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    got_t g;
    pid_t grandchild = start_recording_pid(
        f, 5, "t.hang", "sleep 1000 &\necho $! > $pidfile.tmp && mv $pidfile.tmp $pidfile\nwait",
        true, &g);
    assert_true(grandchild > 0);
    assert_int_equal(runner_cancel(f->runner, 5, 1), RUNNER_CANCEL_STOPPING);
    run_until(f, 1, 5000);
    assert_int_equal(g.outcome, RUNNER_CANCELLED);
    assert_string_equal(g.error, "Cancelled by request");
    assert_int_equal(g.signal, SIGTERM);
    assert_int_equal(g.exit_code, -1);
    assert_true(g.duration_ms < 2000);
    assert_true(process_gone(grandchild));
    got_free(&g);
}

/* The cancel races the handler's own end: a handler that has exited, but whose exit the loop has
 * not seen yet, reports what really happened. So does one already stopping for its timeout. */
static void test_cancel_race(void **state)
{
    fixture_t *f = *state;
    runner_opts_t o = default_opts(f->dir);
    make_runner(f, &o);
    got_t g;
    /* The loop does not run: the handler ends unseen (a zombie). */
    pid_t pid = start_recording_pid(
        f, 6, "t.quick",
        "echo $$ > $pidfile.tmp && mv $pidfile.tmp $pidfile\necho '{\"done\": true}'", false, &g);
    assert_true(pid > 0);
    assert_true(process_gone(pid));
    assert_int_equal(runner_cancel(f->runner, 6, 1), RUNNER_CANCEL_ENDED);
    run_until(f, 1, 5000);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    assert_json_equal(g.result, "{\"done\": true}");
    got_free(&g);

    /* An inline handler is over before any cancel can come. */
    start(f, 9, "core.noop", "{}", 0, &g);
    assert_int_equal(runner_cancel(f->runner, 9, 1), RUNNER_CANCEL_ENDED);
    run_until(f, 2, 5000);
    assert_int_equal(g.outcome, RUNNER_COMPLETED);
    got_free(&g);

    write_handler(f, "t.stubborn", "trap '' TERM\nsleep 1000 &\nwait\nwait");
    start(f, 10, "t.stubborn", "{}", 1, &g);
    run_until(f, 3, 1300); /* past the timeout: SIGTERM sent, ignored */
    assert_int_equal(runner_cancel(f->runner, 10, 1), RUNNER_CANCEL_ENDED);
    run_until(f, 3, 5000);
    assert_int_equal(g.outcome, RUNNER_TIMEOUT);
    assert_int_equal(g.signal, SIGKILL);
    got_free(&g);
}

int main(void)
{
    log_setup(LOG_ERROR, LOG_FORMAT_TEXT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_echo_returns_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_handlers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_json_output_kept_as_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment_is_minimal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_keeps_stderr_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_by_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_kills_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_escalates_to_sigkill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leftovers_killed_on_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphans_reaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shell_metacharacters_stay_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_error_text_stays_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writable_dir_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_params_and_unread_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_descriptors_not_inherited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_state_is_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminate_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_kills_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noop_inprocess, setup, teardown),
        cmocka_unit_test_setup_teardown(test_example_module, setup, teardown),
        cmocka_unit_test_setup_teardown(test_module_output_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_module_inline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_module_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_abandoned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_terminate_and_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_handler_child_not_reaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_exec_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_race, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
