/* The worker's handler runner: executable and in-process handlers on the worker's event loop. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "warren/ids.h"
#include "warren/log.h"
#include "warren/utf8.h"
#include "worker/capture.h"
#include "worker/handlers.h"
#include "worker/inproc.h"
#include "worker/runner.h"
#include "worker/spawn.h"

#define READ_CHUNK 65536
#define READS_PER_WAKEUP 16 /* bound one stream's turn so other events are served */
#define DRAIN_MAX_READS 256 /* after exit: at most this many reads per stream */
#define SWEEP_INTERVAL_S 1  /* reap check in case a SIGCHLD was lost */
#define HANDLER_PATH "PATH=/usr/local/bin:/usr/bin:/bin"

/*
 * A job's life: RUNNING (handler process or thread started) -> STOPPING (on timeout, cancel or
 * shutdown: SIGTERM sent and SIGKILL armed, or a thread asked to stop and its abandonment armed)
 * -> DONE (result filled, done_cb queued). Failures to start and inline (version 1) in-process
 * runs go straight to DONE; a handler exiting or its run() returning moves RUNNING or STOPPING
 * to DONE.
 */
typedef enum { JOB_RUNNING = 0, JOB_STOPPING, JOB_DONE } job_state_t;

/* One started runner_spec_t: its process (or in-process run), pipes, output and result. */
typedef struct job {
    runner_t *runner;
    struct job *prev, *next;
    int64_t execution_id;
    char *action_ref;
    int attempt;
    int timeout_s;
    char traceparent[IDS_TRACEPARENT_LEN + 1]; /* "" when the dispatch had none */
    runner_done_cb done_cb;
    void *arg;
    int64_t started_ms;
    job_state_t state;
    pid_t pid;                 /* 0 for in-process handlers; also the process group */
    inproc_run_t *thread;      /* a version 2 in-process handler's run, until joined */
    int in_fd, out_fd, err_fd; /* parent ends, -1 once closed */
    char *params;
    size_t params_len, params_off;
    struct event *ev_in, *ev_out, *ev_err, *ev_timer, *ev_done;
    capture_t out, err;
    bool timed_out, terminated, cancelled; /* why it was stopped: at most one is set */
    /* The result, filled when the job moves to DONE. */
    runner_outcome_t outcome;
    int exit_code, signal;
    char *result_json, *stderr_tail;
    int64_t duration_ms;
    char error[ERRBUF_SIZE];
} job_t;

struct runner {
    struct event_base *base;
    char *handlers_dir;
    size_t max_output_bytes, stderr_tail_bytes;
    int kill_grace_s, default_timeout_s;
    handlers_t *handlers; /* in-process handlers */
    struct event *ev_sigchld, *ev_sweep;
    int wake_fd; /* eventfd: a version 2 handler's run() returned */
    struct event *ev_wake;
    job_t *jobs; /* every job whose done_cb has not been called: the table of our children */
    size_t running;
    spawn_guard_t guard;     /* kills the handlers' groups if the worker dies */
    uint64_t orphans_reaped; /* processes that were not ours (we are PID 1, or a subreaper) */
};

const char *runner_outcome_name(runner_outcome_t outcome)
{
    switch (outcome) {
    case RUNNER_COMPLETED: return "completed";
    case RUNNER_FAILED: return "failed";
    case RUNNER_TIMEOUT: return "timeout";
    case RUNNER_CANCELLED: return "cancelled";
    }
    return "unknown";
}

static void log_job(log_level_t level, const char *msg, const job_t *j, const char *key,
                    const char *val)
{
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, j->execution_id);
    log_kv(level, msg, "execution_id", id, "action_ref", j->action_ref, key, val, NULL);
}

/* ---- job lifetime ---------------------------------------------------------------------- */

static void job_close_fd(job_t *j, int *fd, struct event **ev)
{
    if (*ev) {
        event_free(*ev);
        *ev = NULL;
    }
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void job_release_io(job_t *j)
{
    job_close_fd(j, &j->in_fd, &j->ev_in);
    job_close_fd(j, &j->out_fd, &j->ev_out);
    job_close_fd(j, &j->err_fd, &j->ev_err);
    if (j->ev_timer)
        evtimer_del(j->ev_timer);
}

static void job_free(job_t *j)
{
    job_release_io(j);
    if (j->ev_timer)
        event_free(j->ev_timer);
    if (j->ev_done)
        event_free(j->ev_done);
    capture_reset(&j->out);
    capture_reset(&j->err);
    free(j->action_ref);
    free(j->params);
    free(j->result_json);
    free(j->stderr_tail);
    free(j);
}

static void job_unlink(job_t *j)
{
    runner_t *r = j->runner;
    if (j->prev)
        j->prev->next = j->next;
    else
        r->jobs = j->next;
    if (j->next)
        j->next->prev = j->prev;
    r->running--;
}

/* Runs from the loop after the job finished: hand over the result, then reclaim the job. */
static void on_job_done(evutil_socket_t fd, short what, void *arg)
{
    job_t *j = arg;
    runner_result_t res = {
        .execution_id = j->execution_id,
        .action_ref = j->action_ref,
        .outcome = j->outcome,
        .exit_code = j->exit_code,
        .signal = j->signal,
        .result_json = j->result_json,
        .stderr_tail = j->stderr_tail ? j->stderr_tail : "",
        .truncated = j->out.truncated,
        .duration_ms = j->duration_ms,
        .error = j->outcome == RUNNER_COMPLETED ? NULL : j->error,
    };
    job_unlink(j);
    j->done_cb(&res, j->arg);
    job_free(j);
}

/* Mark the job done; done_cb runs on the next loop iteration, never inside the caller. */
static void job_finish(job_t *j)
{
    j->state = JOB_DONE;
    j->duration_ms = now_mono_ms() - j->started_ms;
    event_active(j->ev_done, EV_TIMEOUT, 1);
}

static void job_fail(job_t *j, const char *error)
{
    j->outcome = RUNNER_FAILED;
    j->exit_code = -1;
    /* It may name paths from the configuration, cut short by an snprintf: the completion
     * must still be UTF-8, or the executor could never store it. */
    capture_error_text(error, j->error, sizeof j->error);
    log_job(LOG_WARN, "execution not started", j, "error", error);
    job_finish(j);
}

/* The result from the captured output; call once the outcome is known. */
static void job_set_result(job_t *j)
{
    bool oom;
    j->result_json = capture_result_json(j->out.buf ? j->out.buf : "", j->out.len, j->out.truncated,
                                         j->outcome == RUNNER_COMPLETED, &oom);
    if (oom)
        log_job(LOG_ERROR, "result dropped", j, "error", "out of memory");
}

/* A handler the runner stopped (timeout, cancel, shutdown) ends as the reason says, however it
 * ended: set outcome and error. False when it was not stopped. */
static bool job_stopped_outcome(job_t *j)
{
    if (j->timed_out) {
        j->outcome = RUNNER_TIMEOUT;
        snprintf(j->error, sizeof j->error, "timed out after %d s", j->timeout_s);
    } else if (j->cancelled) {
        j->outcome = RUNNER_CANCELLED;
        snprintf(j->error, sizeof j->error, "Cancelled by request");
    } else if (j->terminated) {
        j->outcome = RUNNER_FAILED;
        snprintf(j->error, sizeof j->error, "terminated: worker shutting down");
    } else {
        return false;
    }
    return true;
}

/* ---- in-process handlers ----------------------------------------------------------------- */

/* run() returned rc with out (either version): the result. Takes out->result_json. */
static void job_inproc_ended(job_t *j, int rc, warren_handler_output_t *out)
{
    j->exit_code = rc;
    if (!job_stopped_outcome(j)) {
        j->outcome = rc == 0 ? RUNNER_COMPLETED : RUNNER_FAILED;
        if (rc != 0)
            capture_error_text(out->error[0] ? out->error : "in-process handler failed", j->error,
                               sizeof j->error);
    }
    /* The output cap holds for modules too; capture_append() marks the cut. */
    const char *text = out->result_json ? out->result_json : "";
    if (capture_append(&j->out, text, strlen(text)) < 0)
        log_job(LOG_ERROR, "result dropped", j, "error", "out of memory");
    free(out->result_json);
    out->result_json = NULL;
    job_set_result(j);
    job_finish(j);
}

/* Version 1: run() inline, on the loop. */
static void job_run_inline(job_t *j, const warren_handler_t *h)
{
    warren_handler_output_t out;
    memset(&out, 0, sizeof out);
    int rc = h->run(j->params, j->params_len, &out);
    out.error[sizeof out.error - 1] = '\0';
    job_inproc_ended(j, rc, &out);
}

/* Version 2: run() on a thread of its own; its end comes through the runner's wake event. */
static int job_start_thread(job_t *j, const warren_handler_v2_t *h, char *err, size_t errlen)
{
    inproc_spec_t spec = {
        .handler = h,
        .params_json = j->params,
        .params_len = j->params_len,
        .execution_id = j->execution_id,
        .attempt = j->attempt,
        .action_ref = j->action_ref,
        .timeout_s = j->timeout_s,
        .deadline_ms = j->timeout_s > 0 ? j->started_ms + (int64_t)j->timeout_s * 1000 : 0,
        .wake_fd = j->runner->wake_fd,
    };
    j->thread = inproc_start(&spec, err, errlen);
    return j->thread ? 0 : -1;
}

static void job_thread_returned(job_t *j)
{
    warren_handler_output_t out;
    int rc = inproc_join(j->thread, &out);
    j->thread = NULL;
    job_release_io(j); /* its timer */
    job_inproc_ended(j, rc, &out);
}

/* kill_grace_s after the stop request run() has still not returned: the execution ends without
 * it, and its thread runs on unwatched (a thread cannot be killed). */
static void job_abandon_thread(job_t *j)
{
    if (!inproc_abandon(j->thread))
        return; /* it returned just now: the wake event joins it */
    j->thread = NULL;
    char grace[16];
    snprintf(grace, sizeof grace, "%d", j->runner->kill_grace_s);
    log_job(LOG_ERROR, "in-process handler did not stop; its thread is abandoned", j,
            "kill_grace_s", grace);
    j->exit_code = -1;
    (void)job_stopped_outcome(j);
    size_t n = strlen(j->error);
    snprintf(j->error + n, sizeof j->error - n,
             "; the in-process handler did not return within %d s and was abandoned",
             j->runner->kill_grace_s);
    job_set_result(j);
    job_finish(j);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    runner_t *r = arg;
    uint64_t n;
    while (read(fd, &n, sizeof n) < 0 && errno == EINTR)
        ;
    for (job_t *j = r->jobs; j; j = j->next)
        if (j->thread && inproc_returned(j->thread))
            job_thread_returned(j);
}

/* ---- executable handlers: output and stdin ------------------------------------------------ */

/* Read what fd has now (at most max_reads chunks); closes the stream at EOF or error. */
static void job_read(job_t *j, int *fd, struct event **ev, capture_t *cap, int max_reads)
{
    char buf[READ_CHUNK];
    for (int i = 0; i < max_reads && *fd >= 0; i++) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            if (capture_append(cap, buf, (size_t)n) < 0)
                log_job(LOG_ERROR, "output dropped", j, "error", "out of memory");
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return;
        } else {
            job_close_fd(j, fd, ev);
        }
    }
}

static void on_output(evutil_socket_t fd, short what, void *arg)
{
    job_t *j = arg;
    if (fd == j->out_fd)
        job_read(j, &j->out_fd, &j->ev_out, &j->out, READS_PER_WAKEUP);
    else
        job_read(j, &j->err_fd, &j->ev_err, &j->err, READS_PER_WAKEUP);
}

/* Write as much of the params as the pipe takes; close stdin when all is written or the
 * handler stopped reading (EPIPE: it does not want its params, which is its business). */
static void job_pump_stdin(job_t *j)
{
    while (j->in_fd >= 0 && j->params_off < j->params_len) {
        ssize_t n = write(j->in_fd, j->params + j->params_off, j->params_len - j->params_off);
        if (n > 0) {
            j->params_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            if (!event_pending(j->ev_in, EV_WRITE, NULL))
                event_add(j->ev_in, NULL);
            return;
        } else {
            if (errno != EPIPE)
                log_job(LOG_WARN, "params not delivered", j, "error", strerror(errno));
            break;
        }
    }
    job_close_fd(j, &j->in_fd, &j->ev_in);
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    job_pump_stdin(arg);
}

/* ---- executable handlers: ending ---------------------------------------------------------- */

static void job_classify(job_t *j, int status)
{
    j->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    j->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (job_stopped_outcome(j)) {
        return;
    } else if (WIFEXITED(status) && j->exit_code == 0) {
        j->outcome = RUNNER_COMPLETED;
    } else if (WIFEXITED(status)) {
        j->outcome = RUNNER_FAILED;
        snprintf(j->error, sizeof j->error, "handler exited with code %d", j->exit_code);
    } else {
        j->outcome = RUNNER_FAILED;
        snprintf(j->error, sizeof j->error, "handler killed by signal %d (%s)", j->signal,
                 strsignal(j->signal));
    }
}

/*
 * The handler process is gone (!status_known: someone else reaped it). Anything it left
 * in its group is killed, so no handler outlives its execution and its pipes reach EOF; what is
 * already in the pipes is still read.
 */
static void job_exited(job_t *j, int status, bool status_known)
{
    kill(-j->pid, SIGKILL);
    spawn_guard_forget(&j->runner->guard, j->pid);
    job_read(j, &j->out_fd, &j->ev_out, &j->out, DRAIN_MAX_READS);
    job_read(j, &j->err_fd, &j->ev_err, &j->err, DRAIN_MAX_READS);
    job_release_io(j);
    if (status_known) {
        job_classify(j, status);
    } else {
        j->outcome = RUNNER_FAILED;
        j->exit_code = -1;
        snprintf(j->error, sizeof j->error, "handler exit status lost (reaped elsewhere)");
    }
    job_set_result(j);
    j->stderr_tail = capture_text(&j->err);
    job_finish(j);
}

static job_t *job_by_pid(runner_t *r, pid_t pid)
{
    for (job_t *j = r->jobs; j; j = j->next)
        if (j->pid == pid && j->state != JOB_DONE)
            return j;
    return NULL;
}

/* The guard died (killed on its own): the handlers would outlive a dying worker. Start another
 * and tell it every running group. */
static void guard_died(runner_t *r, int status)
{
    char how[64], err[ERRBUF_SIZE];
    snprintf(how, sizeof how, WIFSIGNALED(status) ? "signal %d" : "exit status %d",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    log_kv(LOG_ERROR, "handler guard died; starting another", "how", how, NULL);
    r->guard.pid = 0; /* reaped already */
    spawn_guard_stop(&r->guard);
    if (spawn_guard_start(&r->guard, err, sizeof err) < 0) {
        log_kv(LOG_ERROR, "handler guard not restarted: handlers outlive a killed worker", "error",
               err, NULL);
        return;
    }
    for (job_t *j = r->jobs; j; j = j->next)
        if (j->pid > 0 && j->state != JOB_DONE)
            spawn_guard_add(&r->guard, j->pid);
}

/*
 * Every child that ended: waitpid(-1), not one pid per job, because a worker running as PID 1
 * (or a subreaper) inherits the orphans of its handlers' descendants, and zombies nobody reaps
 * fill the process table. The jobs are the table of our own children, so no job's status is
 * lost; any other pid is such an orphan, reaped and counted. __WNOTHREAD: only children of this
 * thread, the loop's, which spawns every handler and the guard and is the one orphans are handed
 * to (the process's first thread). A version 2 in-process handler that starts a process of its
 * own on its thread (system(), popen()) waits for it itself, and must find it there.
 */
static void runner_reap(runner_t *r)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG | __WNOTHREAD)) > 0) {
        job_t *j = job_by_pid(r, pid);
        if (j)
            job_exited(j, status, true);
        else if (pid == r->guard.pid)
            guard_died(r, status);
        else
            r->orphans_reaped++;
    }
    bool children = false;
    for (job_t *j = r->jobs; j; j = j->next) {
        if (j->pid <= 0 || j->state == JOB_DONE)
            continue;
        pid_t rc = waitpid(j->pid, &status, WNOHANG);
        if (rc == j->pid)
            job_exited(j, status, true);
        else if (rc < 0 && errno == ECHILD)
            job_exited(j, 0, false); /* someone else reaped it */
        else
            children = true;
    }
    if (!children)
        evtimer_del(r->ev_sweep);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    runner_reap(arg);
}

/* How a running job is told to stop, for logs. */
static const char *job_stop_signal(const job_t *j)
{
    return j->thread ? "stop request" : "SIGTERM";
}

/* Tell the handler to stop (set timed_out, cancelled or terminated first): SIGTERM its group, or
 * ask its thread; kill_grace_s later SIGKILL follows, or the thread is abandoned. */
static void job_stop(job_t *j)
{
    j->state = JOB_STOPPING;
    if (j->thread)
        inproc_stop(j->thread, j->timed_out   ? WARREN_HANDLER_STOP_TIMEOUT
                               : j->cancelled ? WARREN_HANDLER_STOP_CANCELLED
                                              : WARREN_HANDLER_STOP_SHUTDOWN);
    else
        kill(-j->pid, SIGTERM);
    struct timeval grace = {j->runner->kill_grace_s, 0};
    evtimer_add(j->ev_timer, &grace);
}

/* The job's one timer: first the execution timeout, then the grace period after the stop. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    job_t *j = arg;
    switch (j->state) {
    case JOB_RUNNING:
        j->timed_out = true;
        log_job(LOG_WARN, "handler timed out", j, "signal", job_stop_signal(j));
        job_stop(j);
        break;
    case JOB_STOPPING:
        if (j->thread) {
            job_abandon_thread(j);
            break;
        }
        log_job(LOG_WARN, "handler ignored SIGTERM", j, "signal", "SIGKILL");
        kill(-j->pid, SIGKILL);
        break;
    case JOB_DONE: break;
    }
}

/* ---- executable handlers: starting -------------------------------------------------------- */

static int set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Pipes for stdin, stdout and stderr. child[] gets the ends for the handler (blocking, like
 * any stdio); the job keeps the other ends, non-blocking and watched by events. Every end is
 * O_CLOEXEC so no other handler inherits them. */
static int job_open_pipes(job_t *j, int child[3])
{
    int p[3][2], made;
    for (made = 0; made < 3; made++)
        if (pipe2(p[made], O_CLOEXEC) < 0)
            break;
    if (made < 3) {
        for (int i = 0; i < made; i++)
            close(p[i][0]), close(p[i][1]);
        return -1;
    }
    child[0] = p[0][0], j->in_fd = p[0][1];
    child[1] = p[1][1], j->out_fd = p[1][0];
    child[2] = p[2][1], j->err_fd = p[2][0];
    struct event_base *base = j->runner->base;
    j->ev_in = event_new(base, j->in_fd, EV_WRITE | EV_PERSIST, on_stdin, j);
    j->ev_out = event_new(base, j->out_fd, EV_READ | EV_PERSIST, on_output, j);
    j->ev_err = event_new(base, j->err_fd, EV_READ | EV_PERSIST, on_output, j);
    if (!j->ev_in || !j->ev_out || !j->ev_err || set_nonblock(j->in_fd) < 0 ||
        set_nonblock(j->out_fd) < 0 || set_nonblock(j->err_fd) < 0) {
        for (int i = 0; i < 3; i++)
            close(child[i]);
        job_release_io(j);
        return -1;
    }
    return 0;
}

/*
 * Start the handler at path (spawn_handler: vfork+exec without copying the worker, exec failures
 * returned to us) directly: no shell, so nothing in the params or the environment can become a
 * command. It gets its pipes as 0-2 and no other descriptor (whatever a library opened without
 * O_CLOEXEC, the broker socket included), a process group of its own, an empty signal mask,
 * default dispositions (the worker ignores SIGPIPE; ignored signals survive exec), and it dies
 * with the worker. The environment is built from scratch: no WARREN__* secret reaches it.
 */
static int job_spawn(job_t *j, const char *path, char *err, size_t errlen)
{
    int child[3];
    if (job_open_pipes(j, child) < 0) {
        snprintf(err, errlen, "cannot create pipes for %.*s: %s", utf8_prec(path, 300), path,
                 strerror(errno));
        return -1;
    }
    char path_env[] = HANDLER_PATH, id[48], ref[300], attempt[40], timeout[40], trace[80];
    snprintf(id, sizeof id, "WARREN_EXECUTION_ID=%" PRId64, j->execution_id);
    snprintf(ref, sizeof ref, "WARREN_ACTION_REF=%s", j->action_ref);
    snprintf(attempt, sizeof attempt, "WARREN_ATTEMPT=%d", j->attempt);
    snprintf(timeout, sizeof timeout, "WARREN_TIMEOUT_S=%d", j->timeout_s);
    snprintf(trace, sizeof trace, "TRACEPARENT=%s", j->traceparent);
    char *envp[] = {path_env, id, ref, attempt, timeout, j->traceparent[0] ? trace : NULL, NULL};
    char *argv[] = {(char *)path, NULL};

    int rc = spawn_handler(&j->runner->guard, path, argv, envp, child, &j->pid);
    for (int i = 0; i < 3; i++)
        close(child[i]);
    if (rc != 0) {
        j->pid = 0;
        job_release_io(j);
        snprintf(err, errlen, "cannot start handler %.*s: %s", utf8_prec(path, 300), path,
                 strerror(rc));
        return -1;
    }
    return 0;
}

static void job_arm_timeout(job_t *j)
{
    if (j->timeout_s > 0) {
        struct timeval tv = {j->timeout_s, 0};
        evtimer_add(j->ev_timer, &tv);
    }
}

static void job_watch(job_t *j)
{
    runner_t *r = j->runner;
    event_add(j->ev_out, NULL);
    event_add(j->ev_err, NULL);
    job_pump_stdin(j);
    job_arm_timeout(j);
    if (!evtimer_pending(r->ev_sweep, NULL)) {
        struct timeval tv = {SWEEP_INTERVAL_S, 0};
        evtimer_add(r->ev_sweep, &tv);
    }
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)j->pid);
    log_job(LOG_DEBUG, "handler started", j, "pid", pid);
}

/* ---- the runner -------------------------------------------------------------------------- */

/* A job record for spec, linked into the runner; NULL on OOM. Freed by on_job_done(). */
static job_t *job_new(runner_t *r, const runner_spec_t *spec, runner_done_cb done_cb, void *arg)
{
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->runner = r;
    j->execution_id = spec->execution_id;
    j->attempt = spec->attempt;
    j->timeout_s = spec->timeout_s > 0 ? spec->timeout_s : r->default_timeout_s;
    if (ids_traceparent_valid(spec->traceparent))
        snprintf(j->traceparent, sizeof j->traceparent, "%s", spec->traceparent);
    j->done_cb = done_cb;
    j->arg = arg;
    j->started_ms = now_mono_ms();
    j->in_fd = j->out_fd = j->err_fd = -1;
    capture_init(&j->out, r->max_output_bytes, false);
    capture_init(&j->err, r->stderr_tail_bytes, true);
    j->action_ref = strdup(spec->action_ref ? spec->action_ref : "");
    bool has_params = spec->params_json && spec->params_len > 0;
    j->params_len = has_params ? spec->params_len : 2;
    j->params = strndup(has_params ? spec->params_json : "{}", j->params_len);
    j->ev_done = evtimer_new(r->base, on_job_done, j);
    j->ev_timer = evtimer_new(r->base, on_timer, j);
    if (!j->action_ref || !j->params || !j->ev_done || !j->ev_timer) {
        job_free(j);
        return NULL;
    }
    j->next = r->jobs;
    if (r->jobs)
        r->jobs->prev = j;
    r->jobs = j;
    r->running++;
    return j;
}

int runner_start(runner_t *r, const runner_spec_t *spec, runner_done_cb done_cb, void *arg,
                 char *err, size_t errlen)
{
    job_t *j = job_new(r, spec, done_cb, arg);
    if (!j) {
        snprintf(err, errlen, "execution %" PRId64 ": out of memory", spec->execution_id);
        return -1;
    }
    const handler_entry_t *h = handlers_find(r->handlers, j->action_ref);
    char path[4096], why[ERRBUF_SIZE];
    if (h && h->v1) {
        job_run_inline(j, h->v1);
    } else if (h) {
        if (job_start_thread(j, h->v2, why, sizeof why) < 0)
            job_fail(j, why);
        else
            job_arm_timeout(j);
    } else if (handlers_exec_path(r->handlers_dir, j->action_ref, path, sizeof path, why,
                                  sizeof why) < 0 ||
               job_spawn(j, path, why, sizeof why) < 0) {
        job_fail(j, why);
    } else {
        job_watch(j);
    }
    return 0;
}

size_t runner_running(const runner_t *r)
{
    return r->running;
}

size_t runner_stuck(const runner_t *r)
{
    return inproc_abandoned();
}

void runner_terminate_all(runner_t *r)
{
    for (job_t *j = r->jobs; j; j = j->next) {
        if ((j->pid <= 0 && !j->thread) || j->state != JOB_RUNNING)
            continue;
        j->terminated = true;
        log_job(LOG_INFO, "terminating handler", j, "signal", job_stop_signal(j));
        job_stop(j);
    }
}

runner_cancel_t runner_cancel(runner_t *r, int64_t execution_id, int attempt)
{
    job_t *j = r->jobs;
    while (j && (j->execution_id != execution_id || j->attempt != attempt))
        j = j->next;
    if (!j)
        return RUNNER_CANCEL_UNKNOWN;
    /* An end that has already happened wins over the cancel: collect it first, so the result
     * says what really happened. */
    if (j->state == JOB_RUNNING && j->thread && inproc_returned(j->thread))
        job_thread_returned(j);
    else if (j->state == JOB_RUNNING && j->pid > 0)
        runner_reap(r);
    if (j->cancelled)
        return RUNNER_CANCEL_REPEATED;
    if (j->state != JOB_RUNNING)
        return RUNNER_CANCEL_ENDED;
    j->cancelled = true;
    log_job(LOG_INFO, "cancelling handler", j, "signal", job_stop_signal(j));
    job_stop(j);
    return RUNNER_CANCEL_STOPPING;
}

bool runner_has_handler(const runner_t *r, const char *action_ref)
{
    char path[4096], err[ERRBUF_SIZE];
    return handlers_find(r->handlers, action_ref) ||
           handlers_exec_path(r->handlers_dir, action_ref, path, sizeof path, err, sizeof err) == 0;
}

json_object *runner_handlers(const runner_t *r)
{
    return handlers_list(r->handlers, r->handlers_dir);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    runner_reap(arg);
}

/* Handler pipes must never land on 0-2: point any closed standard descriptor at /dev/null. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) < 0)
            log_warn("cannot open /dev/null: %s", strerror(errno));
}

static int runner_check_dir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (!dir || !*dir) {
        snprintf(err, errlen, "handlers_dir is not set");
        return -1;
    }
    if (stat(dir, &st) < 0) {
        snprintf(err, errlen, "handlers_dir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "handlers_dir %s: not a directory", dir);
        return -1;
    }
    if (handlers_writable_by_others(&st)) {
        snprintf(err, errlen,
                 "handlers_dir %s is writable by its group or others (mode %03o): whoever can "
                 "add a file there decides what the worker runs; chmod go-w %s",
                 dir, (unsigned)(st.st_mode & 07777), dir);
        return -1;
    }
    return 0;
}

void runner_set_limits(runner_t *r, const runner_opts_t *opts)
{
    r->max_output_bytes = opts->max_output_bytes;
    r->kill_grace_s = opts->kill_grace_s > 0 ? opts->kill_grace_s : 0;
    r->default_timeout_s = opts->default_timeout_s;
}

runner_t *runner_new(struct event_base *base, const runner_opts_t *opts, char *err, size_t errlen)
{
    if (runner_check_dir(opts->handlers_dir, err, errlen) < 0)
        return NULL;
    ensure_std_fds();
    (void)signal(SIGPIPE, SIG_IGN);
    runner_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->wake_fd = -1;
    r->base = base;
    r->stderr_tail_bytes = opts->stderr_tail_bytes;
    runner_set_limits(r, opts);
    r->guard.fd = -1;
    if (spawn_guard_start(&r->guard, err, errlen) < 0) {
        free(r);
        return NULL;
    }
    r->handlers_dir = strdup(opts->handlers_dir);
    r->handlers = handlers_new();
    r->ev_sigchld = evsignal_new(base, SIGCHLD, on_sigchld, r);
    r->ev_sweep = event_new(base, -1, EV_PERSIST, on_sweep, r);
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    r->ev_wake = r->wake_fd < 0 ? NULL
                                : event_new(base, r->wake_fd, EV_READ | EV_PERSIST, on_wake, r);
    if (!r->handlers_dir || !r->handlers || !r->ev_sigchld || !r->ev_sweep || !r->ev_wake ||
        event_add(r->ev_sigchld, NULL) < 0 || event_add(r->ev_wake, NULL) < 0) {
        snprintf(err, errlen, "cannot set up the runner (out of memory or no SIGCHLD event)");
        runner_free(r);
        return NULL;
    }
    int modules = handlers_load_dir(r->handlers, r->handlers_dir);
    char n[16];
    snprintf(n, sizeof n, "%d", modules);
    log_kv(LOG_INFO, "runner ready", "handlers_dir", r->handlers_dir, "modules", n, NULL);
    return r;
}

/* Kill and reap a handler synchronously: only for runner_free(), when the loop is not run. */
static void job_kill_now(job_t *j)
{
    kill(-j->pid, SIGKILL);
    while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    spawn_guard_forget(&j->runner->guard, j->pid);
}

/* The same for a thread, which cannot be killed: asked to stop, joined if run() has returned,
 * else abandoned (it dies with the process). */
static void job_drop_thread(job_t *j)
{
    inproc_stop(j->thread, WARREN_HANDLER_STOP_SHUTDOWN);
    if (!inproc_abandon(j->thread)) {
        warren_handler_output_t out;
        (void)inproc_join(j->thread, &out);
        free(out.result_json);
    }
    j->thread = NULL;
}

void runner_free(runner_t *r)
{
    if (!r)
        return;
    while (r->jobs) {
        job_t *j = r->jobs;
        /* job_unlink() takes j off j->runner->jobs, and every job on r->jobs has j->runner == r
         * (job_new), which clang-tidy does not know: NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
        if (j->thread)
            job_drop_thread(j);
        else if (j->pid > 0 && j->state != JOB_DONE)
            job_kill_now(j);
        job_unlink(j);
        job_free(j);
    }
    if (r->ev_sigchld)
        event_free(r->ev_sigchld);
    if (r->ev_sweep)
        event_free(r->ev_sweep);
    if (r->ev_wake)
        event_free(r->ev_wake);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    spawn_guard_stop(&r->guard); /* every group it knew of is gone already */
    /* Abandoned threads may still run code of their modules. */
    if (r->handlers && inproc_abandoned() > 0)
        handlers_keep_modules(r->handlers);
    handlers_free(r->handlers);
    free(r->handlers_dir);
    free(r);
}

uint64_t runner_orphans_reaped(const runner_t *r)
{
    return r->orphans_reaped;
}
