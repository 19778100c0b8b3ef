/*
 * The worker's own small HTTP server on worker.http_listen: /livez (the loop turns), /readyz
 * (consuming its queue and its control queue on a connected broker, no breaker open) and /metrics (the counters of
 * the stats line, in flight and capacity, breakers, handler durations by action).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "warren/log.h"
#include "worker/worker_internal.h"

/* The worker answers probes only: small requests, few connections. */
static const http_limits_t health_limits = {.max_connections = 16,
                                            .max_header_bytes = 8192,
                                            .max_body_bytes = 1024,
                                            .body_budget_bytes = 16 * 1024,
                                            .read_timeout_s = 10,
                                            .header_timeout_s = 5,
                                            .body_timeout_s = 5,
                                            .idle_timeout_s = 30};

static void on_livez(http_req_t *r, void *arg)
{
    http_reply_livez(r, ((worker_t *)arg)->loop_beat_ms);
}

static void on_readyz(http_req_t *r, void *arg)
{
    worker_t *w = arg;
    http_ready_t h;
    http_ready_init(&h);
    bool running = w->phase == PHASE_RUNNING;
    http_ready_check(&h, "phase", running ? "running" : "draining", running,
                     "shutting down: takes no new work");
    const struct {
        const char *check, *breaker;
        const subscription_t *s;
    } subs[] = {{"consumer", "breaker_consume", &w->dispatch},
                {"control", "breaker_control", &w->control}};
    for (size_t i = 0; i < 2; i++) {
        const subscription_t *s = subs[i].s;
        bool consuming = s->consuming && mq_connected(s->client);
        char why[300];
        snprintf(why, sizeof why, "not consuming %s", s->queue);
        http_ready_check(&h, subs[i].check, consuming ? "ok" : "lost", consuming, why);
        http_ready_breaker(&h, subs[i].breaker, mq_breaker(s->client));
    }
    http_ready_breaker(&h, "breaker_publish", mq_breaker(w->publisher));
    http_ready_reply(r, &h, "worker", w->id);
}

static void on_metrics(http_req_t *r, void *arg)
{
    http_reply_metrics(r, &((worker_t *)arg)->metrics);
}

/* Values that are not counters of worker_stats_t, read at scrape time. */
static void collect(metrics_out_t *o, void *arg)
{
    worker_t *w = arg;
    metrics_family(o, "warren_worker_in_flight", "gauge", "Executions running now");
    metrics_sample(o, "warren_worker_in_flight", "", (double)runner_running(w->runner));
    metrics_family(o, "warren_worker_capacity", "gauge",
                   "Executions this worker runs at once (worker.max_concurrency)");
    metrics_sample(o, "warren_worker_capacity", "", (double)w->o.max_concurrency);
    metrics_family(o, "warren_worker_held", "gauge", "Dispatches accepted, not started yet");
    metrics_sample(o, "warren_worker_held", "", (double)execs_count(&w->execs, STAGE_HELD));
    metrics_family(o, "warren_worker_outbox", "gauge", "Reports waiting to be confirmed");
    metrics_sample(o, "warren_worker_outbox", "", (double)w->outbox.len);
    metrics_family(o, "warren_worker_consuming", "gauge",
                   "1 while consuming its queue (dispatch) or its control queue (control)");
    metrics_sample(o, "warren_worker_consuming", "queue=\"dispatch\"", w->dispatch.consuming);
    metrics_sample(o, "warren_worker_consuming", "queue=\"control\"", w->control.consuming);
    const http_breaker_ref_t breakers[] = {{"consume", mq_breaker(w->consumer)},
                                           {"control", mq_breaker(w->control_client)},
                                           {"publish", mq_breaker(w->publisher)}};
    http_metrics_breakers(o, breakers, 3);
    http_metrics_clients(o, w->http, "worker.http_listen");
    metrics_family(o, "warren_handler_duration_seconds", "histogram",
                   "How long handlers ran, by action (at most 64 actions, then \"other\")");
    size_t n = w->n_durations + (w->durations[HEALTH_MAX_ACTIONS].h.count > 0);
    for (size_t i = 0; i < n; i++) {
        const handler_hist_t *d = i < w->n_durations ? &w->durations[i]
                                                     : &w->durations[HEALTH_MAX_ACTIONS];
        char l[320] = "";
        (void)metrics_label(l, sizeof l, "action", i < w->n_durations ? d->action : "other");
        metrics_sample_hist(o, "warren_handler_duration_seconds", l, &d->h);
    }
}

void health_observe(worker_t *w, const char *action_ref, int64_t duration_ms)
{
    handler_hist_t *d = NULL;
    for (size_t i = 0; i < w->n_durations && !d; i++)
        if (!strcmp(w->durations[i].action, action_ref))
            d = &w->durations[i];
    if (!d && w->n_durations < HEALTH_MAX_ACTIONS) {
        d = &w->durations[w->n_durations++];
        snprintf(d->action, sizeof d->action, "%s", action_ref);
        metrics_hist_init(&d->h, metrics_seconds_bounds, metrics_seconds_bounds_len);
    }
    if (!d) {
        d = &w->durations[HEALTH_MAX_ACTIONS];
        if (!d->h.bounds)
            metrics_hist_init(&d->h, metrics_seconds_bounds, metrics_seconds_bounds_len);
    }
    metrics_hist_observe(&d->h, (double)duration_ms / 1000.0);
}

static int register_counters(worker_t *w)
{
    const worker_stats_t *s = &w->stats;
    const struct {
        const char *name, *labels, *help;
        const uint64_t *v;
    } c[] = {
        {"warren_worker_deliveries_total", "", "Dispatches received", &s->deliveries},
        {"warren_worker_executions_started_total", "", "Executions started", &s->started},
        {"warren_worker_executions_total", "outcome=\"completed\"", "Executions ended, by outcome",
         &s->completed},
        {"warren_worker_executions_total", "outcome=\"failed\"", NULL, &s->failed},
        {"warren_worker_executions_total", "outcome=\"timeout\"", NULL, &s->timed_out},
        {"warren_worker_executions_total", "outcome=\"cancelled\"", NULL, &s->cancelled},
        {"warren_worker_rejected_total", "", "Dispatches refused (dead-lettered)", &s->rejected},
        {"warren_worker_past_deadline_total", "",
         "Dispatches dead-lettered unstarted: their start deadline had passed", &s->past_deadline},
        {"warren_worker_duplicates_total", "", "Redeliveries of executions already here",
         &s->duplicates},
        {"warren_worker_repeats_total", "result=\"answered\"",
         "Redeliveries of finished executions: answered with the kept completion, or run again "
         "(the completion was no longer kept)",
         &s->repeats},
        {"warren_worker_repeats_total", "result=\"rerun\"", NULL, &s->reruns},
        {"warren_worker_requeued_total", "", "Dispatches handed back while shutting down",
         &s->requeued},
        {"warren_worker_dropped_held_total", "",
         "Accepted dispatches dropped with a lost channel (the broker requeued them)",
         &s->dropped_held},
        {"warren_worker_publish_retries_total", "", "Failed report publishes, retried",
         &s->publish_retries},
        {"warren_worker_reports_lost_total", "", "Reports never confirmed (given up at exit)",
         &s->reports_lost},
        {"warren_worker_heartbeats_failed_total", "", "Heartbeats not published",
         &s->heartbeats_failed},
        {"warren_worker_resubscribes_total", "", "Times the worker consumed its queue again",
         &s->resubscribes},
        {"warren_worker_abandoned_total", "", "Handlers killed by an immediate exit, unreported",
         &s->abandoned},
        {"warren_worker_cancels_total", "", "Cancel requests received", &s->cancels},
        {"warren_worker_cancels_ignored_total", "",
         "Cancel requests for executions not here, finished or ending", &s->cancels_ignored},
        {"warren_worker_control_rejected_total", "",
         "Control messages that were no cancel for this worker (dead-lettered)",
         &s->control_rejected},
        {"warren_worker_control_resubscribes_total", "",
         "Times the worker consumed its control queue again", &s->control_resubscribes},
        {"warren_worker_bad_signatures_total", "",
         "Dispatches and control messages refused because their signature does not verify "
         "(dead-lettered, never run)",
         &s->bad_signatures},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (metrics_add_u64(&w->metrics, METRIC_COUNTER, c[i].name,
                            c[i].help ? c[i].help : c[i - 1].help, c[i].labels, c[i].v) != 0)
            return -1;
    return metrics_add_collector(&w->metrics, collect, w);
}

int health_start(worker_t *w, char *err, size_t errlen)
{
    metrics_init(&w->metrics);
    const char *listen = w->o.cfg->worker.http_listen;
    if (!listen || !*listen)
        return 0;
    w->http = http_new(w->base, "health", &health_limits);
    if (!w->http || register_counters(w) != 0 ||
        http_route(w->http, HTTP_GET, "/livez", on_livez, w) != 0 ||
        http_route(w->http, HTTP_GET, "/readyz", on_readyz, w) != 0 ||
        http_route(w->http, HTTP_GET, "/metrics", on_metrics, w) != 0) {
        snprintf(err, errlen, "out of memory setting up worker.http_listen");
        return -1;
    }
    const char *cert = w->o.cfg->worker.http_tls_cert_file,
               *key = w->o.cfg->worker.http_tls_key_file;
    if (*cert || *key) { /* HTTPS: read at start (a new certificate needs a restart) */
        if (!*cert || !*key) {
            snprintf(err, errlen,
                     "worker.http_tls_cert_file and worker.http_tls_key_file go "
                     "together: set both or neither");
            return -1;
        }
        const http_tls_files_t f = {.cert_file = cert,
                                    .key_file = key,
                                    .cert_key = "worker.http_tls_cert_file",
                                    .key_key = "worker.http_tls_key_file"};
        http_tls_t *tls = http_tls_new(&f, err, errlen);
        if (!tls)
            return -1;
        http_set_tls(w->http, tls);
    }
    return http_listen(w->http, listen, err, errlen);
}

void health_stop(worker_t *w)
{
    http_free(w->http);
    w->http = NULL;
    metrics_free(&w->metrics);
}
