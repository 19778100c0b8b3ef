/*
 * The executor's /livez, /readyz and /metrics: answered on the loop at once, from what it knows
 * (no statement, no wait), and the metrics of its own parts (breakers, database lanes, the API).
 */
#include <stdio.h>
#include "executor/api.h"

/* ---- health ---- */

void api_livez(http_req_t *r, void *arg)
{
    http_reply_livez(r, *((api_t *)arg)->loop_beat_ms);
}

/* Ready: the database lanes hold their connections, every consumer is registered, no breaker
 * is open. Answered from what the loop knows, without a statement: a probe never waits for a
 * busy database. A publisher the broker blocked (resource alarm) is reported, degraded. */
void api_readyz(http_req_t *r, void *arg)
{
    api_t *x = arg;
    http_ready_t h;
    http_ready_init(&h);
    bool db_ok = !*x->draining && dbc_lanes_up(x->lanes);
    http_ready_check(&h, "database", db_ok ? "ok" : "unreachable", db_ok,
                     *x->draining ? "shutting down" : "database unreachable");
    for (size_t i = 0; i < x->consumers->n; i++) {
        const consumer_t *c = x->consumers->c[i];
        char name[64], why[300];
        snprintf(name, sizeof name, "consumer_%s", c->name);
        snprintf(why, sizeof why, "not consuming %s", c->queue);
        http_ready_check(&h, name, c->subscribed ? "ok" : "lost", c->subscribed, why);
        snprintf(name, sizeof name, "breaker_consume_%s", c->name);
        http_ready_breaker(&h, name, mq_breaker(c->mq));
    }
    http_ready_breaker(&h, "breaker_publish", mq_breaker(x->pub));
    http_ready_degraded(&h, "publisher", mq_blocked(x->pub) ? "blocked" : "ok", mq_blocked(x->pub),
                        "the broker blocked publishing (resource alarm): dispatches wait");
    http_ready_reply(r, &h, NULL, NULL);
}

void api_metrics(http_req_t *r, void *arg)
{
    http_reply_metrics(r, ((api_t *)arg)->metrics);
}

/* ---- metrics of the executor's own parts ---- */

void api_collect_parts(metrics_out_t *o, void *arg)
{
    api_t *x = arg;
    size_t nc = x->consumers->n;
    char names[CONSUMER_SET_MAX][64];
    http_breaker_ref_t refs[CONSUMER_SET_MAX + 1] = {{"publish", mq_breaker(x->pub)}};
    for (size_t i = 0; i < nc; i++) {
        const consumer_t *c = x->consumers->c[i];
        snprintf(names[i], sizeof names[i], "consume_%s", c->name);
        refs[i + 1] = (http_breaker_ref_t){names[i], mq_breaker(c->mq)};
    }
    http_metrics_breakers(o, refs, nc + 1);
    metrics_family(o, "warren_database_errors_total", "counter",
                   "Failed database transactions (lost connections included)");
    metrics_sample_u64(o, "warren_database_errors_total", "", dbc_lanes_errors(x->lanes));
    metrics_family(o, "warren_database_up", "gauge",
                   "1 while every database lane of the executor that was used holds its "
                   "connection");
    metrics_sample(o, "warren_database_up", "", dbc_lanes_up(x->lanes) ? 1 : 0);
    metrics_family(o, "warren_api_database_waiting", "gauge",
                   "API requests waiting for a database connection of the API");
    metrics_sample(o, "warren_api_database_waiting", "",
                   (double)(x->api_reads->waiting + x->api_writes->waiting));
    metrics_family(o, "warren_api_database_refused_total", "counter",
                   "API requests answered 503 because the API's database connections were busy");
    metrics_sample_u64(o, "warren_api_database_refused_total", "",
                       x->api_reads->refused + x->api_writes->refused);
    metrics_family(o, "warren_http_connections", "gauge", "Open connections to api.listen");
    metrics_sample(o, "warren_http_connections", "", (double)http_connections(x->server));
    http_metrics_clients(o, x->server, "api.listen");
}
