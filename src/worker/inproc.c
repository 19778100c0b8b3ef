/* In-process handlers of ABI version 2 on threads of their own; see inproc.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "worker/inproc.h"

struct inproc_run {
    warren_handler_call_t call; /* call.worker points back here */
    const warren_handler_v2_t *handler;
    char *params, *action_ref;
    pthread_t thread;
    atomic_int stop; /* WARREN_HANDLER_GO_ON or the first stop reason */
    /* mu guards returned and abandoned, and with cond carries stop requests into wait(). */
    pthread_mutex_t mu;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    bool returned, abandoned;
    int wake_fd;
    int rc;
    warren_handler_output_t out;
};

static atomic_size_t abandoned_running;

static int call_stop_requested(const warren_handler_call_t *call)
{
    const inproc_run_t *run = call->worker;
    return atomic_load((atomic_int *)&run->stop);
}

static struct timespec mono_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Longest single wait(), so the deadline's seconds cannot overflow (about 31 years). */
#define WAIT_MAX_MS INT64_C(1000000000000)

static int call_wait(const warren_handler_call_t *call, int64_t ms)
{
    inproc_run_t *run = call->worker;
    struct timespec until = mono_in(ms <= 0 ? 0 : ms < WAIT_MAX_MS ? ms : WAIT_MAX_MS);
    pthread_mutex_lock(&run->mu);
    while (atomic_load(&run->stop) == WARREN_HANDLER_GO_ON &&
           pthread_cond_timedwait(&run->cond, &run->mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&run->mu);
    return atomic_load(&run->stop);
}

static void run_free(inproc_run_t *run)
{
    pthread_cond_destroy(&run->cond);
    pthread_mutex_destroy(&run->mu);
    free(run->out.result_json);
    free(run->params);
    free(run->action_ref);
    free(run);
}

static void *thread_main(void *arg)
{
    inproc_run_t *run = arg;
    int rc = run->handler->run(&run->call, &run->out);
    run->out.error[sizeof run->out.error - 1] = '\0';
    pthread_mutex_lock(&run->mu);
    run->rc = rc;
    run->returned = true;
    bool orphan = run->abandoned;
    if (!orphan) {
        uint64_t one = 1;
        ssize_t n = write(run->wake_fd, &one, sizeof one);
        (void)n; /* an eventfd counter cannot overflow here; the loop also sweeps */
    }
    pthread_mutex_unlock(&run->mu);
    if (orphan) {
        /* Nobody waits for this run any more: the worker already reported its execution. */
        run_free(run);
        atomic_fetch_sub(&abandoned_running, 1);
    }
    return NULL;
}

/* A run with its own copies of the strings and its lock and condition; NULL on failure. */
static inproc_run_t *run_new(const inproc_spec_t *s)
{
    inproc_run_t *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->params = strndup(s->params_json, s->params_len);
    run->action_ref = strdup(s->action_ref);
    pthread_condattr_t attr;
    bool cond_ok = pthread_condattr_init(&attr) == 0;
    cond_ok = cond_ok && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&run->cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!cond_ok || pthread_mutex_init(&run->mu, NULL) != 0 || !run->params || !run->action_ref) {
        free(run->params);
        free(run->action_ref);
        free(run);
        return NULL;
    }
    run->handler = s->handler;
    run->wake_fd = s->wake_fd;
    atomic_init(&run->stop, WARREN_HANDLER_GO_ON);
    run->call = (warren_handler_call_t){
        .params_json = run->params,
        .params_len = s->params_len,
        .execution_id = s->execution_id,
        .attempt = s->attempt,
        .action_ref = run->action_ref,
        .timeout_s = s->timeout_s,
        .deadline_ms = s->deadline_ms,
        .stop_requested = call_stop_requested,
        .wait = call_wait,
        .worker = run,
    };
    return run;
}

inproc_run_t *inproc_start(const inproc_spec_t *spec, char *err, size_t errlen)
{
    inproc_run_t *run = run_new(spec);
    if (!run) {
        snprintf(err, errlen, "cannot start in-process handler %s: out of memory",
                 spec->action_ref);
        return NULL;
    }
    /* Signals stay with the loop's thread: the new thread inherits a full mask. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&run->thread, NULL, thread_main, run);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start in-process handler %s: %s", spec->action_ref,
                 strerror(rc));
        run_free(run);
        return NULL;
    }
    return run;
}

bool inproc_returned(inproc_run_t *run)
{
    pthread_mutex_lock(&run->mu);
    bool returned = run->returned;
    pthread_mutex_unlock(&run->mu);
    return returned;
}

void inproc_stop(inproc_run_t *run, int reason)
{
    pthread_mutex_lock(&run->mu);
    int go_on = WARREN_HANDLER_GO_ON;
    atomic_compare_exchange_strong(&run->stop, &go_on, reason);
    pthread_cond_broadcast(&run->cond);
    pthread_mutex_unlock(&run->mu);
}

int inproc_join(inproc_run_t *run, warren_handler_output_t *out)
{
    pthread_join(run->thread, NULL);
    int rc = run->rc;
    *out = run->out;
    run->out.result_json = NULL; /* now the caller's */
    run_free(run);
    return rc;
}

bool inproc_abandon(inproc_run_t *run)
{
    pthread_mutex_lock(&run->mu);
    bool returned = run->returned;
    if (!returned) {
        run->abandoned = true;
        atomic_fetch_add(&abandoned_running, 1);
        pthread_detach(run->thread);
    }
    pthread_mutex_unlock(&run->mu);
    return !returned;
}

size_t inproc_abandoned(void)
{
    return atomic_load(&abandoned_running);
}
