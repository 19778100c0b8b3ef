/* The executor daemon's event loop: start-up checks, timers, consumers, signals, shutdown. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "executor/executor.h"
#include "warren/db.h"
#include "warren/log.h"
#include "warren/topology.h"

#define STATS_INTERVAL_S 30
#define PUMP_MAX_MS 1000

void exec_params_from(exec_params_t *p, const warren_config_t *cfg)
{
    memset(p, 0, sizeof *p);
    p->poll_interval_ms = cfg->executor.poll_interval_ms;
    p->batch_size = cfg->executor.batch_size;
    p->scheduled_timeout_s = cfg->executor.scheduled_timeout_s;
    p->heartbeat_stale_factor = cfg->executor.heartbeat_stale_factor;
    p->monitor_interval_s = cfg->executor.monitor_interval_s;
    p->dlq_retry_delay_ms = cfg->executor.dlq_retry_delay_ms;
    p->stats_interval_s = STATS_INTERVAL_S;
    p->exchange = cfg->rabbitmq.exchanges.executions;
    p->results_queue = cfg->rabbitmq.queues.results;
    p->heartbeats_queue = cfg->rabbitmq.queues.heartbeats;
    p->dlq_queue = cfg->rabbitmq.dead_letter.enabled ? cfg->rabbitmq.dead_letter.queue : NULL;
}

static struct timeval ms_tv(int64_t ms)
{
    return (struct timeval){.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

/* ---- timers ---- */

static void on_sched(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    if (x->draining)
        return;
    int r = sched_tick(x);
    struct timeval tv = ms_tv(r == 1 ? 0 : x->p.poll_interval_ms);
    evtimer_add(x->sched_ev, &tv);
}

static void each_consumer(executor_t *x, void (*fn)(consumer_t *))
{
    fn(&x->results);
    fn(&x->heartbeats);
    if (x->p.dlq_queue)
        fn(&x->dlq);
}

/* Heartbeats on every connection, deliveries the library buffered, lost consumers. */
static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    /* A dead publisher connection is noticed and remade by the next publish. */
    if (mq_connected(x->pub) && mq_pump(x->pub) < 0)
        log_kv(LOG_DEBUG, "publisher connection lost while idle", NULL);
    if (!x->draining)
        each_consumer(x, consumer_pump);
}

static void on_monitor(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    if (!x->draining)
        monitor_run(x);
}

static void on_stats(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    executor_t *x = arg;
    stats_log(&x->stats, mq_breaker(x->pub)->state, x->db.errors);
}

/* ---- signals ---- */

/* First SIGTERM/SIGINT: stop claiming, finish what is in hand, exit 0. */
static void drain(executor_t *x)
{
    x->draining = true;
    log_kv(LOG_INFO, "draining: no new claims; finishing the batches in hand", NULL);
    evtimer_del(x->sched_ev);
    if (x->monitor_ev)
        evtimer_del(x->monitor_ev);
    each_consumer(x, consumer_finish);
    sched_flush_reverts(x);
    if (x->n_revert > 0)
        log_kv(LOG_WARN, "some unconfirmed dispatches stay scheduled; the monitor of the next "
                         "executor fails them after executor.scheduled_timeout_s", NULL);
    event_base_loopexit(x->base, NULL);
}

/* Second SIGTERM/SIGINT, possibly while the drain waits on the database: leave now. */
static void exit_fast(int sig)
{
    (void)sig;
    static const char msg[] = "warren executor: second signal: exiting without finishing\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(EXIT_RUNTIME);
}

static void on_term(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    executor_t *x = arg;
    if (x->terms++ > 0)
        return;
    log_kv(LOG_INFO, "signal received: shutting down", "signal", strsignal((int)sig), NULL);
    /* The drain runs right here and may block in libpq; a plain handler still sees the
     * second signal. */
    event_del(x->sig_term);
    event_del(x->sig_int);
    struct sigaction sa = {.sa_handler = exit_fast};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    drain(x);
}

static void on_quit(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    (void)arg;
    /* At once: unacked deliveries return to their queues when the connections drop. */
    log_kv(LOG_WARN, "SIGQUIT: exiting at once", NULL);
    _exit(EXIT_RUNTIME);
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

static int start_consumer(executor_t *x, consumer_t *c, const char *name, const char *queue,
                          consumer_batch_fn fn, const mq_options_t *o)
{
    consumer_opts_t co = {.name = name, .queue = queue, .mq = o, .base = x->base,
                          .retry_delay_ms = x->p.dlq_retry_delay_ms, .handle = fn,
                          .fallback = dlq_store_raw, .ctx = x, .stats = &x->stats};
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
    mq_options_t o;
    char err[ERRBUF_SIZE];
    mq_options_from_config(&o, x->cfg, "warren-executor");
    x->pub = mq_new(&o);
    if (!x->pub || mq_connect(x->pub, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot connect to RabbitMQ", "error", x->pub ? err : "out of memory",
               NULL);
        return -1;
    }
    if (topo_declare_common(x->pub, x->cfg, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot declare the topology", "error", err, NULL);
        return -1;
    }
    if (start_consumer(x, &x->results, "results", x->p.results_queue, results_handle, &o) != 0 ||
        start_consumer(x, &x->heartbeats, "heartbeats", x->p.heartbeats_queue, registry_handle,
                       &o) != 0)
        return -1;
    if (x->p.dlq_queue &&
        start_consumer(x, &x->dlq, "dead-letters", x->p.dlq_queue, dlq_handle, &o) != 0)
        return -1;
    if (!x->p.dlq_queue)
        log_kv(LOG_WARN, "dead-lettering is disabled: expired dispatches are failed only by the "
                         "timeout monitor", NULL);
    return 0;
}

static int pump_interval_ms(const warren_config_t *cfg)
{
    int ms = cfg->rabbitmq.heartbeat_s > 0 ? cfg->rabbitmq.heartbeat_s * 1000 / 4 : PUMP_MAX_MS;
    return ms < 100 ? 100 : ms > PUMP_MAX_MS ? PUMP_MAX_MS : ms;
}

static struct event *add_timer(executor_t *x, event_callback_fn fn, int64_t ms, bool persist)
{
    struct event *ev = event_new(x->base, -1, persist ? EV_PERSIST : 0, fn, x);
    struct timeval tv = ms_tv(ms);
    if (ev)
        event_add(ev, &tv);
    return ev;
}

static struct event *add_signal(executor_t *x, int sig, event_callback_fn fn)
{
    struct event *ev = evsignal_new(x->base, sig, fn, x);
    if (ev)
        event_add(ev, NULL);
    return ev;
}

static int setup_events(executor_t *x)
{
    x->sched_ev = add_timer(x, on_sched, 0, false);
    x->pump_ev = add_timer(x, on_pump, pump_interval_ms(x->cfg), true);
    x->stats_ev = add_timer(x, on_stats, (int64_t)x->p.stats_interval_s * 1000, true);
    if (x->p.monitor_interval_s > 0)
        x->monitor_ev = add_timer(x, on_monitor, (int64_t)x->p.monitor_interval_s * 1000, true);
    x->sig_term = add_signal(x, SIGTERM, on_term);
    x->sig_int = add_signal(x, SIGINT, on_term);
    x->sig_quit = add_signal(x, SIGQUIT, on_quit);
    bool ok = x->sched_ev && x->pump_ev && x->stats_ev && x->sig_term && x->sig_int && x->sig_quit &&
              (x->p.monitor_interval_s == 0 || x->monitor_ev);
    if (!ok)
        log_kv(LOG_ERROR, "cannot set up the event loop", NULL);
    return ok ? 0 : -1;
}

static int start(executor_t *x)
{
    if (!(x->base = event_base_new())) {
        log_kv(LOG_ERROR, "cannot create the event loop", NULL);
        return -1;
    }
    if (dbc_init(&x->db, x->cfg->database.url, x->cfg->database.connect_timeout_s) != 0)
        return -1;
    PGconn *db = dbc_get(&x->db);
    if (!db || check_migrations(db) != 0)
        return -1;
    return connect_broker(x) == 0 && setup_events(x) == 0 ? 0 : -1;
}

static void free_event(struct event *ev)
{
    if (ev)
        event_free(ev);
}

static void stop(executor_t *x)
{
    struct event *evs[] = {x->sched_ev, x->pump_ev, x->stats_ev, x->monitor_ev,
                           x->sig_term, x->sig_int, x->sig_quit};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        free_event(evs[i]);
    if (x->results.mq)
        consumer_free(&x->results);
    if (x->heartbeats.mq)
        consumer_free(&x->heartbeats);
    if (x->dlq.mq)
        consumer_free(&x->dlq);
    mq_destroy(x->pub);
    sched_free(x);
    dbc_free(&x->db);
    if (x->base)
        event_base_free(x->base);
}

int executor_run(const warren_config_t *cfg)
{
    executor_t *x = calloc(1, sizeof *x);
    if (!x) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return EXIT_RUNTIME;
    }
    x->cfg = cfg;
    exec_params_from(&x->p, cfg);
    int rc = EXIT_RUNTIME;
    if (start(x) == 0) {
        char batch[16];
        snprintf(batch, sizeof batch, "%d", x->p.batch_size);
        log_kv(LOG_INFO, "executor started", "results", x->p.results_queue, "heartbeats",
               x->p.heartbeats_queue, "dead_letters", x->p.dlq_queue ? x->p.dlq_queue : "(disabled)",
               "batch_size", batch, NULL);
        event_base_dispatch(x->base);
        rc = x->terms > 1 ? EXIT_RUNTIME : EXIT_OK;
        stats_log(&x->stats, mq_breaker(x->pub)->state, x->db.errors);
        log_kv(LOG_INFO, "executor stopped", NULL);
    }
    stop(x);
    free(x);
    return rc;
}
