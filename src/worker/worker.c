/* The worker daemon: one event loop, its timers and signals, graded shutdown, stats. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "warren/fiber.h"
#include "warren/log.h"
#include "warren/notify.h"
#include "warren/reload.h"
#include "warren/signing.h"
#include "warren/utf8.h"
#include "warren/timestamp.h"
#include "worker/worker_internal.h"

#define STATS_INTERVAL_S 60
/* After the handlers were told to stop: time left for them to die and for their reports. */
#define FLUSH_GRACE_S 10
/* Reports that may queue up beyond two per running execution before new starts wait. */
#define OUTBOX_SLACK 16
#define RETRY_BASE_MS 200
#define RETRY_MAX_MS 30000

static void worker_stats_log(worker_t *w, const char *msg)
{
    const worker_stats_t *s = &w->stats;
    const uint64_t n[] = {
        runner_running(w->runner),
        execs_count(&w->execs, STAGE_HELD),
        w->outbox.len,
        s->deliveries,
        s->started,
        s->completed,
        s->failed,
        s->timed_out,
        s->rejected,
        s->past_deadline,
        s->duplicates,
        s->repeats,
        s->reruns,
        s->requeued,
        s->dropped_held,
        s->publish_retries,
        s->reports_lost,
        s->heartbeats_failed,
        s->resubscribes,
        s->abandoned,
        runner_orphans_reaped(w->runner),
        runner_stuck(w->runner),
        s->cancelled,
        s->cancels,
        s->cancels_ignored,
        s->control_rejected,
        s->control_resubscribes,
        s->bad_signatures,
    };
    char v[sizeof n / sizeof n[0]][24];
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        snprintf(v[i], sizeof v[i], "%" PRIu64, n[i]);
    log_kv(LOG_INFO, msg, "worker", w->id, "running", v[0], "held", v[1], "outbox", v[2],
           "deliveries", v[3], "started", v[4], "completed", v[5], "failed", v[6], "timeout", v[7],
           "rejected", v[8], "past_deadline", v[9], "duplicates", v[10], "repeats", v[11], "reruns",
           v[12], "requeued", v[13], "dropped_held", v[14], "publish_retries", v[15],
           "reports_lost", v[16], "heartbeats_failed", v[17], "resubscribes", v[18], "abandoned",
           v[19], "orphans_reaped", v[20], "stuck_handlers", v[21], "cancelled", v[22], "cancels",
           v[23], "cancels_ignored", v[24], "control_rejected", v[25], "control_resubscribes",
           v[26], "bad_signatures", v[27], NULL);
}

/* The loop ends once the fibers in hand (a flush, a heartbeat: "offline" is the last) have
 * ended, within publish_timeout_ms and a second; then their waits are cancelled. */
static void finish_check(worker_t *w)
{
    if (fiber_count() == 0) {
        event_base_loopbreak(w->base);
        return;
    }
    if (now_mono_ms() >= w->finish_deadline_ms) {
        fiber_cancel_all();
        w->finish_deadline_ms = INT64_MAX;
    }
    (void)evloop_arm(&w->ev_finish, 10);
}

static void on_finish(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    finish_check(arg);
}

void worker_finish(worker_t *w, int exit_code)
{
    if (w->phase == PHASE_DONE)
        return;
    w->exit_code = exit_code;
    w->phase = PHASE_DONE;
    w->finish_deadline_ms = now_mono_ms() + w->cfg->rabbitmq.publish_timeout_ms + 1000;
    evtimer_assign(&w->ev_finish, w->base, on_finish, w);
    finish_check(w);
}

/* Draining ends when nothing runs and everything is reported. */
static void check_drained(worker_t *w)
{
    if (w->phase != PHASE_DRAINING || runner_running(w->runner) > 0 || w->outbox.len > 0)
        return;
    log_kv(LOG_INFO, "drained: every execution finished and reported", "worker", w->id, NULL);
    /* Nothing runs here any more: "offline" tells the executor at once, instead of it
     * waiting for the heartbeat to go stale. */
    reporter_heartbeat(w, "offline");
    worker_finish(w, EXIT_OK);
}

void worker_kick(worker_t *w)
{
    if (w->phase == PHASE_DONE)
        return;
    if (w->kicking) {
        w->kick_again = true;
        return;
    }
    w->kicking = true;
    do {
        w->kick_again = false;
        if (intake_start_held(w) > 0) {
            /* Flush once the in-process handlers just started have finished (their
             * completions are already due on the loop): a completion ready before its
             * running status went out replaces it. */
            worker_kick_soon(w);
            break;
        }
        reporter_flush(w);
    } while (w->kick_again && w->phase != PHASE_DONE);
    w->kicking = false;
    check_drained(w);
}

void worker_kick_soon(worker_t *w)
{
    event_active(&w->ev_kick, EV_TIMEOUT, 0); /* repeated calls coalesce while active */
}

/* First the drain deadline: stop the handlers (their ends are still reported). Then, after
 * the kill grace and a little time to report, give up. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_t *w = arg;
    char running[24], outbox[24];
    snprintf(running, sizeof running, "%zu", runner_running(w->runner));
    snprintf(outbox, sizeof outbox, "%zu", w->outbox.len);
    if (!w->terminated) {
        w->terminated = true;
        if (runner_running(w->runner) > 0)
            log_kv(LOG_WARN, "shutdown timeout: stopping the running handlers", "worker", w->id,
                   "running", running, NULL);
        runner_terminate_all(w->runner);
        int64_t grace_s = (int64_t)w->o.runner.kill_grace_s + FLUSH_GRACE_S;
        (void)evloop_arm(&w->ev_deadline, grace_s * 1000);
        return;
    }
    log_kv(LOG_ERROR, "shutdown: gave up waiting", "worker", w->id, "running", running,
           "unreported", outbox, NULL);
    w->stats.abandoned += runner_running(w->runner);
    worker_finish(w, EXIT_RUNTIME);
}

static void drain(worker_t *w, const char *signal_name)
{
    char running[24], timeout[16];
    snprintf(running, sizeof running, "%zu", runner_running(w->runner));
    snprintf(timeout, sizeof timeout, "%d", w->o.shutdown_timeout_s);
    log_kv(LOG_INFO, "shutting down: no new dispatches, finishing running executions", "worker",
           w->id, "signal", signal_name, "running", running, "shutdown_timeout_s", timeout, NULL);
    w->phase = PHASE_DRAINING;
    notify_stopping("draining: no new dispatches, finishing running executions");
    intake_requeue_held(w);
    reporter_heartbeat(w, "stopping"); /* the executor stops dispatching here */
    (void)evloop_arm(&w->ev_deadline, (int64_t)w->o.shutdown_timeout_s * 1000);
    subscriber_cancel(&w->dispatch); /* requeues what arrives meanwhile; may finish the drain */
    worker_kick(w);
}

/* Second signal or SIGQUIT: running handlers are killed without a report; the executor's
 * monitor fails their executions once this worker's heartbeats stop. */
static void exit_now(worker_t *w, const char *signal_name)
{
    size_t running = runner_running(w->runner);
    char n[24], outbox[24];
    snprintf(n, sizeof n, "%zu", running);
    snprintf(outbox, sizeof outbox, "%zu", w->outbox.len);
    w->stats.abandoned += running;
    log_kv(LOG_WARN, "exiting now: running handlers are killed", "worker", w->id, "signal",
           signal_name, "running", n, "unreported", outbox, NULL);
    fiber_cancel_all(); /* publishes in hand end at once, unconfirmed */
    worker_finish(w, running > 0 || w->outbox.len > 0 ? EXIT_RUNTIME : EXIT_OK);
}

/* Nothing here blocks (confirm waits are fibers'), so every signal comes through the loop: a
 * second one can still kill the handlers before the process leaves. */
static void on_stop(void *arg, evloop_stop_t step, const char *signal_name)
{
    worker_t *w = arg;
    if (step != EVLOOP_DRAIN)
        exit_now(w, signal_name);
    else if (w->phase == PHASE_RUNNING)
        drain(w, signal_name);
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_t *w = arg;
    w->loop_beat_ms = now_mono_ms();
    subscriber_pump(&w->dispatch);
    subscriber_pump(&w->control);
    if (!mq_held(w->publisher)) { /* not while a fiber publishes on it */
        int rc = mq_pump(w->publisher);
        (void)rc; /* heartbeats and late frames; a loss shows at the next publish */
    }
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_t *w = arg;
    reporter_heartbeat(w, w->phase == PHASE_RUNNING ? "online" : "stopping");
}

static void on_stats(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_stats_log(arg, "worker stats");
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_kick(arg);
}

static void opts_from(worker_opts_t *o, const warren_config_t *cfg, const char *id)
{
    *o = (worker_opts_t){
        .id = id,
        .cfg = cfg,
        .max_concurrency = cfg->worker.max_concurrency,
        .heartbeat_interval_s = cfg->worker.heartbeat_interval_s,
        .shutdown_timeout_s = cfg->worker.shutdown_timeout_s,
        .runner = {.handlers_dir = cfg->worker.handlers_dir,
                   .max_output_bytes = (size_t)cfg->worker.max_output_bytes,
                   .stderr_tail_bytes = WORKER_STDERR_TAIL_BYTES,
                   .kill_grace_s = cfg->worker.kill_grace_s,
                   .default_timeout_s = cfg->worker.default_timeout_s},
    };
}

/* SIGHUP: hand the reloadable keys on to what copied them at start. */
static void apply_reload(void *arg, const cfg_diff_t *d)
{
    worker_t *w = arg;
    worker_opts_t o;
    opts_from(&o, w->cfg, w->id);
    w->o.shutdown_timeout_s = o.shutdown_timeout_s;
    w->o.runner.max_output_bytes = o.runner.max_output_bytes;
    w->o.runner.kill_grace_s = o.runner.kill_grace_s;
    w->o.runner.default_timeout_s = o.runner.default_timeout_s;
    runner_set_limits(w->runner, &w->o.runner);
    mq_reconfigure(w->consumer, w->cfg);
    mq_reconfigure(w->control_client, w->cfg);
    mq_reconfigure(w->publisher, w->cfg);
    if (cfg_diff_reloads(d, "worker.heartbeat_interval_s")) {
        w->o.heartbeat_interval_s = o.heartbeat_interval_s;
        event_del(&w->ev_heartbeat);
        if (evloop_every(&w->ev_heartbeat, w->base, (int64_t)w->o.heartbeat_interval_s * 1000,
                         on_heartbeat, w) != 0)
            log_kv(LOG_ERROR, "cannot restart the heartbeat timer", "worker", w->id, NULL);
        /* At once: the executor judges staleness by the interval the last heartbeat named. */
        reporter_heartbeat(w, "online");
    }
}

static void on_reload(void *arg)
{
    worker_t *w = arg;
    const reload_hooks_t hooks = {.apply = apply_reload, .arg = w};
    if (w->phase != PHASE_RUNNING) /* a drain's deadlines are set: a restart follows anyway */
        log_kv(LOG_INFO, "SIGHUP ignored: draining", "worker", w->id, NULL);
    else
        (void)reload_config(w->cfg, &hooks);
}

static int setup_events(worker_t *w)
{
    evtimer_assign(&w->ev_retry, w->base, on_kick, w);
    evtimer_assign(&w->ev_deadline, w->base, on_deadline, w);
    evtimer_assign(&w->ev_kick, w->base, on_kick, w);
    subscriber_init(&w->dispatch, w, &subscriber_dispatches, w->consumer, w->queue,
                    &w->stats.resubscribes);
    subscriber_init(&w->control, w, &control_kind, w->control_client, w->control_queue,
                    &w->stats.control_resubscribes);
    int64_t pump_ms = evloop_pump_interval_ms((int64_t)w->o.cfg->rabbitmq.heartbeat_s * 1000);
    if (evloop_every(&w->ev_pump, w->base, pump_ms, on_pump, w) != 0 ||
        evloop_every(&w->ev_heartbeat, w->base, (int64_t)w->o.heartbeat_interval_s * 1000,
                     on_heartbeat, w) != 0 ||
        evloop_every(&w->ev_stats, w->base, STATS_INTERVAL_S * 1000, on_stats, w) != 0 ||
        evloop_signals_init(&w->signals, w->base, on_stop, w) != 0 ||
        evloop_watchdog(&w->ev_watchdog, w->base) != 0)
        return -1;
    evloop_signals_on_reload(&w->signals, on_reload);
    return 0;
}

/* Settings no connect could succeed with (URL, TLS files) stop the start; a broker that is
 * away does not: the worker keeps reconnecting. */
static int setup_clients(worker_t *w, char *err, size_t errlen)
{
    /* The app_id (and connection name) names this worker, so a report or a connection in the
     * management UI says which worker sent it. */
    char app_id[sizeof w->id + 16];
    snprintf(app_id, sizeof app_id, "warren-worker/%s", w->id);
    mq_options_t mo;
    mq_options_from_config(&mo, w->o.cfg, app_id);
    if (mq_check_options(&mo, err, errlen) != 0)
        return -1;
    mo.prefetch = w->o.max_concurrency; /* basic.qos on the consuming channels */
    w->consumer = mq_new(&mo);
    w->control_client = mq_new(&mo);
    mo.prefetch = 0;
    w->publisher = mq_new(&mo);
    if (w->consumer && w->control_client && w->publisher)
        return 0;
    snprintf(err, errlen, "out of memory setting up the worker");
    return -1;
}

static int setup(worker_t *w, const worker_opts_t *o, char *err, size_t errlen)
{
    w->o = *o;
    snprintf(w->id, sizeof w->id, "%s", o->id);
    w->o.id = w->id;
    if (topo_worker_queue(w->id, w->queue, sizeof w->queue) != 0 ||
        topo_control_queue(w->id, w->control_queue, sizeof w->control_queue) != 0) {
        snprintf(err, errlen, "invalid worker id '%.*s': %s", utf8_prec(o->id, 80), o->id,
                 IDS_WORKER_RULE);
        return -1;
    }
    w->exchange = o->cfg->rabbitmq.exchanges.executions;
    if (gethostname(w->host, sizeof w->host) != 0)
        snprintf(w->host, sizeof w->host, "unknown");
    w->host[sizeof w->host - 1] = '\0';
    ts_now(w->started_at, sizeof w->started_at);
    if (envelope_new_incarnation(w->incarnation, sizeof w->incarnation) != 0) {
        snprintf(err, errlen, "cannot make the incarnation: the kernel gave no random bytes");
        return -1;
    }
    execs_init(&w->execs);
    /* Two reports per running execution, one per held one (a cancel), and some slack. */
    outbox_init(&w->outbox, 3 * (size_t)o->max_concurrency + OUTBOX_SLACK, RETRY_BASE_MS,
                RETRY_MAX_MS);
    w->base = event_base_new();
    if (!w->base) {
        snprintf(err, errlen, "cannot create the event loop");
        return -1;
    }
    w->runner = runner_new(w->base, &o->runner, err, errlen);
    if (!w->runner)
        return -1;
    if (setup_clients(w, err, errlen) != 0)
        return -1;
    if (setup_events(w) != 0) {
        snprintf(err, errlen, "out of memory setting up the worker");
        return -1;
    }
    w->loop_beat_ms = now_mono_ms();
    return health_start(w, err, errlen);
}

/* The runner first (its events are its own); freeing the base removes the worker's. */
static void teardown(worker_t *w)
{
    reporter_give_up(w);
    if (w->runner) {
        worker_stats_log(w, "worker stopped");
        runner_free(w->runner); /* kills what still runs */
    }
    /* Closing the consumer connection hands every unacked delivery back to the broker. */
    mq_destroy(w->consumer);
    mq_destroy(w->control_client); /* the broker deletes the control queue with it */
    mq_destroy(w->publisher);
    execs_free(&w->execs);
    outbox_free(&w->outbox);
    health_stop(w);
    fiber_cleanup();
    evloop_base_free(w->base);
}

extern char **environ;

/*
 * Once the configuration is loaded, the worker's WARREN__* variables (the broker URL holds a
 * password) are of no more use, and nothing should read them (a SIGHUP reload reads the copy
 * the configuration took, cfg->env, like the rest of it): they are unset, and their text
 * in the initial environment is overwritten, since unsetenv only drops the pointer and
 * /proc/PID/environ shows that block. The process becomes non-dumpable, which closes
 * /proc/PID/{environ,mem} and ptrace to other processes of the same user (handlers included:
 * they get a fresh environment anyway) and leaves no core file. Handlers and the guard inherit
 * the clean environment; a handler is dumpable again after its exec.
 */
static void hide_secrets(void)
{
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n += strncmp(*e, "WARREN__", 8) == 0;
    char **found = n ? calloc(n, sizeof *found) : NULL;
    size_t k = 0;
    for (char **e = environ; found && *e; e++)
        if (strncmp(*e, "WARREN__", 8) == 0)
            found[k++] = *e;
    for (size_t i = 0; i < k; i++) {
        char *eq = strchr(found[i], '=');
        char *name = eq ? strndup(found[i], (size_t)(eq - found[i])) : NULL;
        if (name)
            (void)unsetenv(name);
        free(name);
        explicit_bzero(found[i], strlen(found[i]));
    }
    free(found);
    if (n > k || prctl(PR_SET_DUMPABLE, 0) != 0)
        log_kv(LOG_WARN, "could not hide the worker's environment from other processes", "error",
               n > k ? "out of memory" : strerror(errno), NULL);
}

static int run(const worker_opts_t *opts, warren_config_t *cfg)
{
    char err[ERRBUF_SIZE] = "";
    hide_secrets();
    worker_t *w = calloc(1, sizeof *w);
    if (!w)
        return EXIT_RUNTIME;
    w->cfg = cfg;
    int rc = EXIT_RUNTIME;
    if (setup(w, opts, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "worker cannot start", "worker", opts->id, "error", err, NULL);
    } else {
        char n[16];
        snprintf(n, sizeof n, "%d", opts->max_concurrency);
        log_kv(LOG_INFO, "worker starting", "worker", w->id, "incarnation", w->incarnation, "queue",
               w->queue, "max_concurrency", n, "handlers_dir", opts->runner.handlers_dir, "host",
               w->host, NULL);
        char status[300];
        snprintf(status, sizeof status, "subscribing to %s", w->queue);
        notify_status(status);
        subscriber_start_later(&w->dispatch, 0);
        subscriber_start_later(&w->control, 0);
        if (w->phase != PHASE_DONE)
            event_base_dispatch(w->base);
        rc = w->exit_code;
    }
    teardown(w);
    free(w);
    return rc;
}

int worker_run(warren_config_t *cfg, const char *id)
{
    worker_opts_t o;
    char err[ERRBUF_SIZE];
    opts_from(&o, cfg, id);
    if (sign_setup(cfg->message_queue.signing_key_file, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "worker cannot start", "worker", id, "error", err, NULL);
        return EXIT_RUNTIME;
    }
    if (sign_active())
        log_kv(LOG_INFO, "messages signed and checked", "key_id", sign_key_id(sign_active()), NULL);
    notify_init();
    int rc = run(&o, cfg);
    notify_close();
    sign_teardown();
    return rc;
}
