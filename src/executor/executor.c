/* The executor daemon's event loop: start-up checks, timers, consumers, signals, shutdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "executor/attempts.h"
#include "executor/dlq_handler.h"
#include "executor/executor.h"
#include "executor/identity.h"
#include "executor/registry.h"
#include "executor/results.h"
#include "warren/db.h"
#include "warren/fiber.h"
#include "warren/log.h"
#include "warren/notify.h"
#include "warren/reload.h"
#include "warren/signing.h"
#include "warren/topology.h"

#define STATS_INTERVAL_S 30

/* ---- the scheduler ---- */

/* The scheduler's fiber: tick, again at once while a full batch went out or work was announced
 * meanwhile, then wait for the poll. */
static void sched_fiber(void *arg)
{
    executor_t *x = arg;
    int r;
    do {
        x->wake_again = false;
        r = sched_tick(&x->sched);
    } while (!x->draining && (r == 1 || x->wake_again));
    x->ticking = false;
    if (x->draining)
        return;
    /* Its lane lost the database: try again on the lane's reconnect backoff (200 ms doubling to
     * 5 s), not after a whole poll interval. */
    int64_t next = x->cfg->executor.poll_interval_ms;
    if (r < 0 && !x->db_dispatch.conn) {
        int64_t wait = x->db_dispatch.next_try_ms - now_mono_ms();
        wait = wait < 10 ? 10 : wait;
        next = wait < next ? wait : next;
    }
    (void)evloop_arm(&x->sched_ev, next);
}

static void on_sched(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    if (x->draining)
        return;
    if (x->ticking) {
        x->wake_again = true;
        return;
    }
    x->ticking = true;
    if (fiber_start(x->base, "scheduler", sched_fiber, x) != 0) {
        x->ticking = false;
        (void)evloop_arm(&x->sched_ev, x->cfg->executor.poll_interval_ms);
    }
}

/* Work arrived (a notification) or slots may have freed (results applied): claim now rather
 * than at the next poll. A tick that runs goes round once more; a blocked scheduler (breaker
 * open, database down) answers the early tick at no cost and re-arms its poll. */
static void wake_scheduler(void *arg)
{
    executor_t *x = arg;
    if (x->draining)
        return;
    if (x->ticking)
        x->wake_again = true; /* the tick's fiber goes round again */
    else
        (void)evloop_arm(&x->sched_ev, 0);
}

/* After a results or dead-letter batch commits: a terminal result, a failed dispatch or a
 * completion that could not be applied each end an attempt that held a worker's slot. Results
 * applied while a dispatch batch waited for its confirms are counted (confirm_wait_results). */
static void on_committed(void *arg, const executor_stats_t *counts)
{
    executor_t *x = arg;
    if (x->sched.publishing && counts->results_applied > 0)
        x->stats.confirm_wait_results++;
    if (counts->results_applied > 0 || counts->results_unprocessable > 0 ||
        counts->dlq_failed_executions > 0)
        wake_scheduler(arg);
}

/* The consumers this executor runs (results, heartbeats; dead-letters and parked-dead-letters
 * when dead-lettering is enabled). */
static void set_consumers(executor_t *x)
{
    consumer_set_t *set = &x->consumers;
    set->n = 0;
    set->c[set->n++] = &x->results;
    set->c[set->n++] = &x->heartbeats;
    if (x->cfg->rabbitmq.dead_letter.enabled) {
        set->c[set->n++] = &x->dlq;
        set->c[set->n++] = &x->parked;
    }
}

static void each_consumer(executor_t *x, void (*fn)(consumer_t *))
{
    for (size_t i = 0; i < x->consumers.n; i++)
        fn(x->consumers.c[i]);
}

/* ---- periodic jobs ---- */

static void job_fiber(void *arg)
{
    executor_job_t *j = arg;
    j->run(j->ctx);
    j->running = false;
}

/* Run the job on a fiber of its own, unless it runs already (a slow round is not doubled). */
static void job_kick(executor_job_t *j)
{
    if (j->running || j->x->draining)
        return;
    j->running = true;
    if (fiber_start(j->x->base, j->name, job_fiber, j) != 0)
        j->running = false;
}

static void on_job(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    job_kick(arg);
}

/* Each job's run as the jobs[] table of setup_events calls it: with its context. */
#define JOB_RUN(fn)                                                                                \
    static void job_##fn(void *ctx)                                                                \
    {                                                                                              \
        (void)fn(ctx);                                                                             \
    }
JOB_RUN(monitor_run)
JOB_RUN(staleness_run)
JOB_RUN(deadlines_run)
JOB_RUN(events_run)
JOB_RUN(redrive_tasks_run)
JOB_RUN(retention_run)
JOB_RUN(gauges_run)
JOB_RUN(hearing_check) /* the scheduler's live workers count from it too */

enum {
    JOB_MONITOR,
    JOB_STALENESS,
    JOB_DEADLINES,
    JOB_EVENTS,
    JOB_REDRIVE,
    JOB_RETENTION,
    JOB_GAUGES,
    JOB_HEARING
};

/* Heartbeats on every connection, deliveries the library buffered, lost consumers. */
static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    x->loop_beat_ms = now_mono_ms();
    /* A dead publisher connection is noticed here and remade on the client's backoff, also
     * while its breaker is open: reconnected, the breaker half-opens and the scheduler's next
     * batch probes at once instead of after open_timeout_s. Not while a fiber publishes. */
    if (!mq_held(x->pub)) {
        if (mq_connected(x->pub) && mq_pump(x->pub) < 0)
            log_kv(LOG_DEBUG, "publisher connection lost while idle", NULL);
        if (!mq_connected(x->pub) && mq_try_connect(x->pub) == MQ_OK)
            log_kv(LOG_DEBUG, "publisher reconnected", NULL);
    }
    if (mq_connected(x->admin) && mq_pump(x->admin) < 0) /* its users reconnect it */
        log_kv(LOG_DEBUG, "admin connection lost while idle", NULL);
    if (x->draining)
        return;
    listener_check(&x->listener);
    each_consumer(x, consumer_pump);
    job_kick(&x->jobs[JOB_HEARING]);
    /* A lane reached the database again: batches kept for a retry go now, not after their
     * backoff, and the scheduler claims what was announced while it could not (its own lane
     * reconnects in its tick). */
    uint64_t reconnects = dbc_lanes_reconnects(&x->lanes);
    if (reconnects != x->db_reconnects_seen) {
        x->db_reconnects_seen = reconnects;
        each_consumer(x, consumer_retry_now);
        wake_scheduler(x);
    }
}

/* The stats line; its dead letter age covers what was recorded since the last one and what is
 * held now, so a backlog that nobody records shows up. */
static void log_stats(executor_t *x)
{
    uint64_t held = dlq_held_age_s(&x->dlq, &x->parked);
    if (held > x->stats.dead_letter_age_s)
        x->stats.dead_letter_age_s = held;
    stats_log(&x->stats, mq_breaker(x->pub)->state, dbc_lanes_errors(&x->lanes));
    x->stats.dead_letter_age_s = 0;
}

static void on_stats(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    log_stats(arg);
}

/* ---- signals ---- */

/* How long a drain waits for the fibers in hand (a batch's statements, a publish's confirms)
 * before it cancels their waits. */
static int64_t drain_bound_ms(const executor_t *x)
{
    return 2 * (int64_t)x->cfg->database.statement_timeout_ms +
           x->cfg->rabbitmq.publish_timeout_ms + 1000;
}

/* The drain's end: once no fiber runs, the refused dispatches are recorded and the loop ends. */
static void on_drained(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    if (fiber_count() > 0) {
        if (now_mono_ms() >= x->drain_deadline_ms) {
            log_kv(LOG_WARN, "draining: work in hand did not end in time; cancelling its waits",
                   NULL);
            fiber_cancel_all();
            x->drain_deadline_ms = INT64_MAX;
        }
        (void)evloop_arm(&x->drain_ev, 10);
        return;
    }
    sched_flush_reverts(&x->sched);
    if (sched_pending_reverts(&x->sched) > 0)
        log_kv(LOG_WARN,
               "some refused dispatches stay scheduled; the monitor of the next executor "
               "returns them to requested after executor.unconfirmed_timeout_ms",
               NULL);
    event_base_loopexit(x->base, NULL);
}

/* First SIGTERM/SIGINT: stop claiming, finish what is in hand, exit 0. */
static void drain(executor_t *x)
{
    x->draining = true;
    notify_stopping("draining: no new claims; finishing the batches in hand");
    log_kv(LOG_INFO, "draining: no new claims; finishing the batches in hand", NULL);
    evtimer_del(&x->sched_ev);
    listener_stop(&x->listener);
    api_waits_release(&x->api);
    for (size_t i = 0; i < sizeof x->jobs / sizeof x->jobs[0]; i++)
        evtimer_del(&x->jobs[i].ev);
    each_consumer(x, consumer_finish);
    x->drain_deadline_ms = now_mono_ms() + drain_bound_ms(x);
    evtimer_assign(&x->drain_ev, x->base, on_drained, x);
    (void)evloop_arm(&x->drain_ev, 0);
}

static void on_stop(void *arg, evloop_stop_t step, const char *signal_name)
{
    executor_t *x = arg;
    if (step == EVLOOP_DRAIN) {
        log_kv(LOG_INFO, "signal received: shutting down", "signal", signal_name, NULL);
        /* The drain waits for the work in hand: a second signal must still end the process. */
        evloop_signals_exit_on_next(&x->signals, "warren executor: second signal: exiting "
                                                 "without finishing\n");
        drain(x);
        return;
    }
    /* At once: unacked deliveries return to their queues when the connections drop. */
    log_kv(LOG_WARN,
           step == EVLOOP_EXIT_NOW ? "SIGQUIT: exiting at once"
                                   : "second signal: exiting without finishing",
           "signal", signal_name, NULL);
    _exit(EXIT_RUNTIME);
}

/* SIGHUP: the reloadable keys the loop does not read afresh at each use. */
static void apply_reload(void *arg, const cfg_diff_t *d)
{
    executor_t *x = arg;
    if (cfg_diff_reloads(d, "executor.monitor_interval_s")) {
        executor_job_t *m = &x->jobs[JOB_MONITOR];
        int64_t s = x->cfg->executor.monitor_interval_s; /* 0: off */
        evtimer_del(&m->ev);
        if (s > 0 && evloop_every(&m->ev, x->base, s * 1000, on_job, m) != 0)
            log_kv(LOG_ERROR, "cannot restart the timeout monitor's timer", NULL);
    }
    if (cfg_diff_reloads(d, "api.statement_timeout_ms")) {
        dbc_pool_configure(&x->api_reads, x->cfg->api.statement_timeout_ms,
                           x->cfg->database.prepared_statements);
        dbc_pool_configure(&x->api_writes, x->cfg->api.statement_timeout_ms,
                           x->cfg->database.prepared_statements);
    }
    consumer_t *all[] = {&x->results, &x->heartbeats, &x->dlq, &x->parked};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        consumer_reconfigure(all[i], x->cfg);
    mq_reconfigure(x->pub, x->cfg);
    api_keys_take(&x->api);
}

static int prepare_reload(void *arg, const warren_config_t *loaded, char *err, size_t errlen)
{
    executor_t *x = arg;
    return api_keys_prepare(&x->api, loaded, err, errlen);
}

static void on_reload(void *arg)
{
    executor_t *x = arg;
    const reload_hooks_t hooks = {.prepare = prepare_reload, .apply = apply_reload, .arg = x};
    if (x->draining) /* the loop is about to end: nothing would use it */
        log_kv(LOG_INFO, "SIGHUP ignored: draining", NULL);
    else
        (void)reload_config(x->cfg, &hooks);
}

/* ---- start-up ---- */

/* Refuse to run against a database whose schema is behind this binary. */
static int check_migrations(PGconn *db)
{
    char err[ERRBUF_SIZE];
    int pending = db_migrate_pending(db, NULL, err, sizeof err);
    if (pending < 0) {
        log_kv(LOG_ERROR, "cannot check the database schema", "error", err, NULL);
        return -1;
    }
    if (pending > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", pending);
        log_kv(LOG_ERROR, "database migrations pending: run `warren migrate` first", "pending", n,
               NULL);
        return -1;
    }
    return 0;
}

/* Before every resubscribe: the common topology (exchanges, dead-letter queue, results and
 * heartbeats queues, bindings), so a queue deleted under a consumer comes back. */
static int declare_common(mq_client_t *mq, const void *arg, char *err, size_t errlen)
{
    return topo_declare_common(mq, arg, err, errlen);
}

static int start_consumer(executor_t *x, consumer_t *c, const char *name, const char *queue,
                          const consumer_handler_t *handler, const mq_options_t *o)
{
    bool frees_slots = handler == &results_handler || handler == &dlq_handler;
    consumer_opts_t co = {.name = name,
                          .queue = queue,
                          .mq = o,
                          .base = x->base,
                          .retry_delay_ms = x->cfg->executor.dlq_retry_delay_ms,
                          .handler = handler,
                          .fallback = &dlq_raw_handler,
                          .db = &x->db_writes,
                          .stats = &x->stats,
                          .declare = declare_common,
                          .declare_arg = x->cfg,
                          .committed = frees_slots ? on_committed : NULL,
                          .committed_arg = x};
    char err[ERRBUF_SIZE];
    if (consumer_init(c, &co) != 0) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return -1;
    }
    if (consumer_start(c, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot consume", "queue", queue, "error", err, NULL);
        return -1;
    }
    return 0;
}

static int connect_broker(executor_t *x)
{
    const warren_config_t *cfg = x->cfg;
    mq_options_t o;
    char err[ERRBUF_SIZE];
    mq_options_from_config(&o, cfg, "warren-executor");
    x->pub = mq_new(&o);
    x->admin = mq_new(&o);
    if (!x->pub || !x->admin || mq_connect(x->pub, err, sizeof err) != 0 ||
        mq_connect(x->admin, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot connect to RabbitMQ", "error",
               x->pub && x->admin ? err : "out of memory", NULL);
        return -1;
    }
    if (topo_declare_common(x->pub, cfg, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot declare the topology", "error", err, NULL);
        return -1;
    }
    if (start_consumer(x, &x->results, "results", cfg->rabbitmq.queues.results, &results_handler,
                       &o) != 0 ||
        start_consumer(x, &x->heartbeats, "heartbeats", cfg->rabbitmq.queues.heartbeats,
                       &registry_handler, &o) != 0)
        return -1;
    bool dl = cfg->rabbitmq.dead_letter.enabled;
    if (dl &&
        (start_consumer(x, &x->dlq, "dead-letters", cfg->rabbitmq.dead_letter.queue, &dlq_handler,
                        &o) != 0 ||
         start_consumer(x, &x->parked, "parked-dead-letters",
                        cfg->rabbitmq.dead_letter.parking_queue, &dlq_parked_handler, &o) != 0))
        return -1;
    if (!dl)
        log_kv(LOG_WARN,
               "dead-lettering is disabled: expired dispatches are failed only by the "
               "timeout monitor",
               NULL);
    return 0;
}

static int setup_events(executor_t *x)
{
    evtimer_assign(&x->sched_ev, x->base, on_sched, x);
    /* The jobs and their periods in ms; 0: off (set up all the same, for drain). */
    const struct {
        const char *name;
        void (*run)(void *ctx);
        void *ctx;
        int64_t ms;
    } jobs[] = {
        [JOB_MONITOR] = {"monitor", job_monitor_run, &x->monitor,
                         (int64_t)x->cfg->executor.monitor_interval_s * 1000},
        [JOB_STALENESS] = {"staleness", job_staleness_run, &x->staleness,
                           (int64_t)x->cfg->staleness.interval_s * 1000},
        [JOB_DEADLINES] = {"deadlines", job_deadlines_run, &x->deadlines, DEADLINES_INTERVAL_MS},
        [JOB_EVENTS] = {"events", job_events_run, &x->events,
                        x->cfg->events.interval_ms}, /* off: it empties the outbox */
        [JOB_REDRIVE] = {"redrive-tasks", job_redrive_tasks_run, &x->redrive_tasks,
                         redrive_tasks_tick_ms()},
        [JOB_RETENTION] = {"retention", job_retention_run, &x->retention,
                           (int64_t)x->cfg->retention.interval_s * 1000},
        [JOB_GAUGES] = {"gauges", job_gauges_run, &x->gauges,
                        x->api.server ? GAUGES_INTERVAL_MS : 0},
        [JOB_HEARING] = {"hearing", job_hearing_check, &x->hearing, 0}, /* kicked by the pump */
    };
    _Static_assert(sizeof jobs / sizeof jobs[0] == sizeof x->jobs / sizeof x->jobs[0],
                   "one timer per job");
    bool jobs_ok = true;
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
        executor_job_t *j = &x->jobs[i];
        j->x = x;
        j->name = jobs[i].name;
        j->run = jobs[i].run;
        j->ctx = jobs[i].ctx;
        evtimer_assign(&j->ev, x->base, on_job, j);
        if (jobs[i].ms > 0 && evloop_every(&j->ev, x->base, jobs[i].ms, on_job, j) != 0)
            jobs_ok = false;
    }
    if (x->api.server)
        job_kick(&x->jobs[JOB_GAUGES]); /* the first refresh at once */
    int64_t pump_ms = evloop_pump_interval_ms((int64_t)x->cfg->rabbitmq.heartbeat_s * 1000);
    bool ok = evloop_arm(&x->sched_ev, 0) == 0 &&
              evloop_every(&x->pump_ev, x->base, pump_ms, on_pump, x) == 0 &&
              evloop_every(&x->stats_ev, x->base, STATS_INTERVAL_S * 1000, on_stats, x) == 0 &&
              jobs_ok && evloop_signals_init(&x->signals, x->base, on_stop, x) == 0 &&
              evloop_watchdog(&x->watchdog_ev, x->base) == 0;
    if (!ok)
        log_kv(LOG_ERROR, "cannot set up the event loop", NULL);
    evloop_signals_on_reload(&x->signals, on_reload);
    return ok ? 0 : -1;
}

/* Each job's context: what it uses of the executor, borrowed. After the broker's clients and
 * the consumers exist. */
static void lend(executor_t *x)
{
    warren_config_t *cfg = x->cfg;
    executor_stats_t *st = &x->stats;
    dbconn_t *jobs = &x->db_jobs;
    x->lanes = (dbc_lanes_t){.lanes = {&x->db_dispatch, &x->db_writes, &x->db_jobs},
                             .pools = {&x->api_reads, &x->api_writes}};
    set_consumers(x);
    sched_init(&x->sched, cfg, &x->db_dispatch, &x->db_writes, x->pub, x->admin, st);
    x->hearing = (hearing_t){.heartbeats = &x->heartbeats, .db = jobs};
    x->retire = (retire_t){.cfg = cfg, .db = jobs, .stats = st};
    x->cancel = (cancel_sender_t){.cfg = cfg, .pub = x->pub, .db = jobs, .stats = st};
    x->monitor = (monitor_t){.cfg = cfg,
                             .db = jobs,
                             .stats = st,
                             .results = &x->results,
                             .hearing = &x->hearing,
                             .retire = &x->retire,
                             .cancel = &x->cancel};
    x->staleness = (staleness_t){.cfg = cfg, .db = jobs, .stats = st};
    x->deadlines = (deadlines_t){.cfg = cfg, .db = jobs, .stats = st};
    x->events = (events_t){.cfg = cfg, .db = jobs, .pub = x->pub, .admin = x->admin, .stats = st};
    x->redrive_tasks = (redrive_tasks_t){.cfg = cfg, .db = jobs, .stats = st};
    x->retention = (retention_t){.cfg = cfg, .db = jobs, .stats = st};
    x->gauges = (gauges_t){.cfg = cfg,
                           .db = jobs,
                           .writes = &x->db_writes,
                           .pub = x->pub,
                           .admin = x->admin,
                           .consumers = &x->consumers,
                           .dlq = &x->dlq,
                           .parked = &x->parked,
                           .stats = st,
                           .values = {.events_upto = -1, .created_upto = -1}};
    x->api = (api_t){.cfg = cfg,
                     .base = x->base,
                     .api_reads = &x->api_reads,
                     .api_writes = &x->api_writes,
                     .lanes = &x->lanes,
                     .consumers = &x->consumers,
                     .pub = x->pub,
                     .stats = st,
                     .cancel = &x->cancel,
                     .metrics = &x->metrics,
                     .draining = &x->draining,
                     .loop_beat_ms = &x->loop_beat_ms};
}

/* The metrics registry: the counters, the API's parts and the gauges, in that order. */
static int register_metrics(executor_t *x)
{
    metrics_init(&x->metrics);
    if (stats_register(&x->stats, &x->metrics) != 0 ||
        metrics_add_collector(&x->metrics, api_collect_parts, &x->api) != 0 ||
        metrics_add_collector(&x->metrics, gauges_collect, &x->gauges) != 0) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return -1;
    }
    return 0;
}

/* A lane's connection, bounded like every statement of the executor. */
static int lane_init(executor_t *x, dbconn_t *d, const char *lane)
{
    const warren_config_t *cfg = x->cfg;
    if (dbc_init(d, cfg->database.url, cfg->database.connect_timeout_s) != 0)
        return -1;
    d->lane = lane;
    dbc_set_statement_timeout(d, cfg->database.statement_timeout_ms);
    dbc_set_prepare(d, cfg->database.prepared_statements);
    return 0;
}

static int start(executor_t *x)
{
    const warren_config_t *cfg = x->cfg;
    stats_init(&x->stats);
    if (!(x->base = event_base_new())) {
        log_kv(LOG_ERROR, "cannot create the event loop", NULL);
        return -1;
    }
    notify_status("connecting to PostgreSQL");
    if (lane_init(x, &x->db_dispatch, "dispatch") != 0 ||
        lane_init(x, &x->db_writes, "writes") != 0 || lane_init(x, &x->db_jobs, "jobs") != 0 ||
        dbc_pool_init(&x->api_reads, "api", (size_t)cfg->api.pool_size, (size_t)cfg->api.queue_size,
                      cfg->database.url, cfg->database.connect_timeout_s) != 0 ||
        dbc_pool_init(&x->api_writes, "api-writes", 1, (size_t)cfg->api.queue_size,
                      cfg->database.url, cfg->database.connect_timeout_s) != 0) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return -1;
    }
    dbc_pool_configure(&x->api_reads, cfg->api.statement_timeout_ms,
                       cfg->database.prepared_statements);
    dbc_pool_configure(&x->api_writes, cfg->api.statement_timeout_ms,
                       cfg->database.prepared_statements);
    /* Start-up waits for its answers (no fiber runs yet): the schema, on the jobs lane. */
    PGconn *db = dbc_get(&x->db_jobs);
    if (!db || check_migrations(db) != 0)
        return -1;
    notify_status("connecting to RabbitMQ and subscribing to the executor's queues");
    if (connect_broker(x) != 0)
        return -1;
    lend(x);
    if (cfg->executor.listen_notify &&
        listener_init(&x->listener, x->base, cfg->database.url, cfg->database.connect_timeout_s,
                      cfg->database.statement_timeout_ms, wake_scheduler, x) != 0) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return -1;
    }
    if (cfg->executor.listen_notify) {
        listener_on_ended(&x->listener, api_waits_announce, &x->api);
        x->api.waits.listening = &x->listener.listening;
    }
    x->loop_beat_ms = now_mono_ms();
    if (register_metrics(x) != 0 || api_start(&x->api) != 0)
        return -1;
    return setup_events(x);
}

/* Consumers first (their events are their own); freeing the base removes the loop's. */
static void stop(executor_t *x)
{
    api_stop(&x->api);
    metrics_free(&x->metrics);
    consumer_free(&x->results);
    consumer_free(&x->heartbeats);
    consumer_free(&x->dlq);
    consumer_free(&x->parked);
    mq_destroy(x->pub);
    mq_destroy(x->admin);
    sched_free(&x->sched);
    listener_free(&x->listener);
    dbc_free(&x->db_dispatch);
    dbc_free(&x->db_writes);
    dbc_free(&x->db_jobs);
    dbc_pool_free(&x->api_reads);
    dbc_pool_free(&x->api_writes);
    fiber_cleanup();
    evloop_base_free(x->base);
}

/* Whom the consumers believe (executor.worker_identity); -1 when the URL names no user. */
static int set_identity(const warren_config_t *cfg)
{
    ident_t id = {.mode = cfg->executor.worker_identity == 1 ? IDENT_PER_WORKER : IDENT_SHARED};
    if (mq_url_user(cfg->rabbitmq.url, id.executor_user, sizeof id.executor_user) != 0) {
        log_kv(LOG_ERROR, "cannot read the broker user from message_queue.rabbitmq.url", NULL);
        return -1;
    }
    ident_set(&id);
    attempts_set_config(cfg);
    dlq_set_names(cfg->rabbitmq.dead_letter.exchange, cfg->rabbitmq.dead_letter.queue);
    char err[ERRBUF_SIZE];
    if (sign_setup(cfg->message_queue.signing_key_file, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot load the message signing keys", "error", err, NULL);
        return -1;
    }
    if (sign_active())
        log_kv(LOG_INFO, "messages signed and checked", "key_id", sign_key_id(sign_active()), NULL);
    if (id.mode == IDENT_PER_WORKER)
        log_kv(LOG_INFO, "per-worker identities: reports must come from the worker they name",
               "executor_user", id.executor_user, NULL);
    return 0;
}

int executor_run(warren_config_t *cfg)
{
    if (set_identity(cfg) != 0) {
        sign_teardown();
        return EXIT_RUNTIME;
    }
    executor_t *x = calloc(1, sizeof *x);
    if (!x) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return EXIT_RUNTIME;
    }
    x->cfg = cfg;
    notify_init();
    int rc = EXIT_RUNTIME;
    if (start(x) == 0) {
        char batch[16];
        snprintf(batch, sizeof batch, "%d", cfg->executor.batch_size);
        log_kv(LOG_INFO, "executor started", "results", cfg->rabbitmq.queues.results, "heartbeats",
               cfg->rabbitmq.queues.heartbeats, "dead_letters",
               cfg->rabbitmq.dead_letter.enabled ? cfg->rabbitmq.dead_letter.queue : "(disabled)",
               "batch_size", batch, NULL);
        /* Connected to both, schema current, every consumer subscribed. */
        notify_ready("running: scheduling, applying results, registering workers, "
                     "handling dead letters");
        event_base_dispatch(x->base);
        rc = EXIT_OK; /* a second signal or SIGQUIT never comes back here */
        log_stats(x);
        log_kv(LOG_INFO, "executor stopped", NULL);
    }
    stop(x);
    free(x);
    notify_close();
    sign_teardown();
    return rc;
}
