/*
 * The executor's HTTP server (api.listen): the API of docs/api.md, /livez, /readyz and
 * /metrics. API handlers run on fibers and take a connection of the API lane for each
 * transaction (reads and writes have pools of their own); /livez, /readyz and /metrics answer
 * from the loop at once, from what it knows.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/db.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

#define JSON_MAX_DEPTH 64

/* ---- shared by the handlers ---- */

/* The secret of Authorization: Bearer or X-API-Key; NULL when the request has none. */
static const char *request_secret(http_req_t *r)
{
    const char *auth = http_header(r, "Authorization");
    if (auth && !strncasecmp(auth, "Bearer ", 7)) {
        auth += 7;
        while (*auth == ' ')
            auth++;
        return *auth ? auth : NULL;
    }
    const char *key = http_header(r, "X-API-Key");
    return key && *key ? key : NULL;
}

bool api_authorize(executor_t *x, http_req_t *r, bool write, char *who, size_t wholen)
{
    if (x->keys.n == 0) { /* no keys: allowed on loopback only, see api_start */
        snprintf(who, wholen, "%s", API_ANONYMOUS);
        return true;
    }
    const char *secret = request_secret(r);
    if (!secret) {
        if (!write && !x->cfg->api.auth_reads) {
            snprintf(who, wholen, "%s", API_ANONYMOUS);
            return true;
        }
        http_add_header(r, "WWW-Authenticate", "Bearer");
        http_error(r, 401, "unauthorized",
                   "this needs an API key (Authorization: Bearer KEY or X-API-Key: KEY)");
        return false;
    }
    const api_key_t *key = api_keys_find(&x->keys, secret);
    if (!key) {
        http_error(r, 403, "forbidden", "the API key is not valid");
        return false;
    }
    if (write && key->scope != API_SCOPE_WRITE) {
        http_error(r, 403, "forbidden", "key '%s' may only read; this needs a write key",
                   key->name);
        return false;
    }
    snprintf(who, wholen, "%s", key->name);
    return true;
}

typedef struct txn_work {
    dbc_work_fn fn;
    void *arg;
    char sqlstate[6];
} txn_work_t;

static int txn_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    txn_work_t *t = arg;
    if (t->fn(db, t->arg, err, errlen) == 0)
        return 0;
    snprintf(t->sqlstate, sizeof t->sqlstate, "%s", db_last_sqlstate(db));
    return -1;
}

/* 503 with Retry-After: the API lane is full (every connection busy, the queue full or the
 * wait too long), or the executor is draining. */
static bool lane_busy(http_req_t *r, const char *why)
{
    http_add_header(r, "Retry-After", "1");
    http_error(r, 503, "busy", "%s; retry after 1 s", why);
    return false;
}

bool api_transaction(executor_t *x, http_req_t *r, const char *what, dbc_work_fn fn, void *arg)
{
    if (x->draining)
        return lane_busy(r, "the executor is shutting down");
    dbc_pool_t *pool = r->method == HTTP_GET ? &x->api_reads : &x->api_writes;
    dbconn_t *d = dbc_pool_acquire(pool, now_mono_ms() + x->cfg->api.statement_timeout_ms);
    if (!d)
        return lane_busy(r, "the API's database connections are all busy");
    txn_work_t t = {.fn = fn, .arg = arg};
    dbc_result_t rc = dbc_transaction(d, what, txn_fn, &t);
    int64_t next_try_ms = d->next_try_ms;
    dbc_pool_release(pool, d);
    if (rc == DBC_OK)
        return true;
    if (rc == DBC_UNAVAILABLE) {
        int64_t wait_ms = next_try_ms - now_mono_ms();
        char retry[24];
        snprintf(retry, sizeof retry, "%" PRId64, wait_ms > 1000 ? (wait_ms + 999) / 1000 : 1);
        http_add_header(r, "Retry-After", retry);
        http_error(r, 503, "database_unavailable", "the database is unreachable; retry after %s s",
                   retry);
    } else if (t.sqlstate[0] == '2' && (t.sqlstate[1] == '2' || t.sqlstate[1] == '3')) {
        /* data exceptions and constraint violations: the input was wrong */
        http_error(r, 400, "bad_request", "the database refused the input (SQLSTATE %s)",
                   t.sqlstate);
    } else {
        http_error(r, 500, "internal", "the database failed while %s", what);
    }
    return false;
}

typedef struct query_work {
    const char *sql;
    int nparams;
    const char *const *params;
    PGresult *res;
} query_work_t;

static int query_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    query_work_t *q = arg;
    PQclear(q->res);
    q->res = NULL;
    return db_exec(db, q->sql, q->nparams, q->params, &q->res, err, errlen);
}

bool api_query(executor_t *x, http_req_t *r, const char *what, const char *sql, int nparams,
               const char *const *params, PGresult **out)
{
    query_work_t q = {.sql = sql, .nparams = nparams, .params = params};
    if (api_transaction(x, r, what, query_fn, &q)) {
        *out = q.res;
        return true;
    }
    PQclear(q.res);
    return false;
}

bool api_cursor(http_req_t *r, char *id_text, size_t len, const char **out)
{
    const char *c = http_query(r, "cursor");
    *out = NULL;
    if (!c)
        return true;
    const char *hex = c + strlen(API_CURSOR_PREFIX);
    char *end;
    unsigned long long v = 0;
    bool ok = !strncmp(c, API_CURSOR_PREFIX, strlen(API_CURSOR_PREFIX)) && *hex &&
              strlen(hex) <= 16 && strspn(hex, "0123456789abcdef") == strlen(hex);
    if (ok) {
        v = strtoull(hex, &end, 16);
        ok = v >= 1 && v <= INT64_MAX;
    }
    if (!ok) {
        http_error(r, 400, "bad_request", "cursor: not one this API gave out");
        return false;
    }
    snprintf(id_text, len, "%llu", v);
    *out = id_text;
    return true;
}

bool api_limit(http_req_t *r, char *limit, size_t len)
{
    const char *l = http_query(r, "limit");
    long n = API_LIST_DEFAULT_LIMIT;
    char *end = NULL;
    if (l && (strspn(l, "0123456789") != strlen(l) || !*l || strlen(l) > 6 ||
              (n = strtol(l, &end, 10)) < 1 || n > API_LIST_MAX_LIMIT)) {
        http_error(r, 400, "bad_request", "limit: a whole number 1-%d", API_LIST_MAX_LIMIT);
        return false;
    }
    snprintf(limit, len, "%ld", n);
    return true;
}

void api_next_cursor(PGresult *res, int last_col, int n_col, const char *limit, char *next,
                     size_t len)
{
    snprintf(next, len, "null");
    if (strtol(PQgetvalue(res, 0, n_col), NULL, 10) == strtol(limit, NULL, 10) &&
        !PQgetisnull(res, 0, last_col))
        snprintf(next, len, "\"" API_CURSOR_PREFIX "%llx\"",
                 strtoull(PQgetvalue(res, 0, last_col), NULL, 10));
}

json_object *api_parse_json(const char *body, size_t len, int *code, char *err, size_t errlen)
{
    *code = 400;
    size_t bad;
    if (!utf8_valid(body, len, &bad)) {
        snprintf(err, errlen, "the body is not valid UTF-8 (byte %zu)", bad);
        return NULL;
    }
    json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
    if (!tok) {
        *code = 503;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *v = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    const char *why = e != json_tokener_success                      ? json_tokener_error_desc(e)
                      : !v                                           ? "null is not a submission"
                      : len - used != strspn(body + used, " \t\r\n") ? "text after the JSON value"
                      : jf_has_nul(v) ? "a string holds a NUL character (\\u0000)"
                                      : NULL;
    if (why) {
        json_object_put(v);
        snprintf(err, errlen, "malformed JSON: %s", why);
        return NULL;
    }
    return v;
}

json_object *api_body_json(http_req_t *r)
{
    const char *type = http_header(r, "Content-Type");
    size_t tl = type ? strcspn(type, "; \t") : 0;
    if (!type || tl != strlen("application/json") || strncasecmp(type, "application/json", tl)) {
        http_error(r, 415, "unsupported_media_type", "send the body as application/json");
        return NULL;
    }
    int code;
    char err[ERRBUF_SIZE];
    json_object *v = api_parse_json(r->body, r->body_len, &code, err, sizeof err);
    if (!v)
        http_error(r, code, code == 503 ? "unavailable" : "bad_request", "%s", err);
    return v;
}

int api_fields(json_object *in, const char *const *known, char *err, size_t errlen)
{
    if (!json_object_is_type(in, json_type_object)) {
        snprintf(err, errlen, "the body is a JSON object, not %s", jf_kind(in));
        return -1;
    }
    json_object_object_foreach(in, key, val) {
        (void)val;
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++)
            ok = !strcmp(key, known[i]);
        if (!ok) {
            char list[256] = "";
            size_t o = 0;
            for (size_t i = 0; known[i] && o < sizeof list; i++)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", known[i]);
            snprintf(err, errlen, "unknown field '%.*s' (known: %s)", utf8_prec(key, 64), key,
                     list);
            return -1;
        }
    }
    return 0;
}

int api_pin(json_object *in, const char **worker, bool *unpin, char *err, size_t errlen)
{
    jf_t f = {in, NULL, err, errlen};
    json_object *u = NULL;
    int has_unpin = 0;
    *worker = NULL;
    *unpin = false;
    if (jf_string(&f, "worker", false, WORKER_ID_MAX, worker) < 0 ||
        (has_unpin = jf_value(&f, "unpin", false, &u)) < 0)
        return -1;
    if (*worker && !ids_worker_valid(*worker)) {
        snprintf(err, errlen, "worker: %s", IDS_WORKER_RULE);
        return -1;
    }
    if (has_unpin && !json_object_is_type(u, json_type_boolean)) {
        snprintf(err, errlen, "unpin: true or false");
        return -1;
    }
    *unpin = has_unpin && json_object_get_boolean(u);
    if (*unpin && *worker) {
        snprintf(err, errlen, "give worker or unpin, not both");
        return -1;
    }
    return 0;
}

bool api_no_fields(http_req_t *r, const char *what)
{
    if (r->body_len == 0 || strspn(r->body, " \t\r\n") == r->body_len)
        return true;
    json_object *body = api_body_json(r);
    if (!body)
        return false;
    bool empty = json_object_is_type(body, json_type_object) &&
                 json_object_object_length(body) == 0;
    json_object_put(body);
    if (!empty)
        http_error(r, 400, "bad_request", "a %s takes no fields; send {} or nothing", what);
    return empty;
}

bool api_execution_verb(executor_t *x, http_req_t *r, const char *what, char *who, size_t wholen,
                        int64_t *id, char *text, size_t textlen)
{
    return api_authorize(x, r, true, who, wholen) && api_execution_id(r, 0, id, text, textlen) &&
           api_no_fields(r, what);
}

bool api_path_id(http_req_t *r, size_t i, const char *what, int64_t *id, char *text, size_t textlen)
{
    const char *s = r->params[i];
    if (ids_execution_id_parse(s, strlen(s), id) != 0) {
        http_error(r, 400, "bad_request", "'%.*s' is not %s id (a positive integer)",
                   utf8_prec(s, 40), s, what);
        return false;
    }
    snprintf(text, textlen, "%" PRId64, *id);
    return true;
}

bool api_execution_id(http_req_t *r, size_t i, int64_t *id, char *text, size_t textlen)
{
    return api_path_id(r, i, "an execution", id, text, textlen);
}

/* ---- health ---- */

static void on_livez(http_req_t *r, void *arg)
{
    http_reply_livez(r, ((executor_t *)arg)->loop_beat_ms);
}

/* Ready: the database lanes hold their connections, every consumer is registered, no breaker
 * is open. Answered from what the loop knows, without a statement: a probe never waits for a
 * busy database. A publisher the broker blocked (resource alarm) is reported, degraded. */
static void on_readyz(http_req_t *r, void *arg)
{
    executor_t *x = arg;
    http_ready_t h;
    http_ready_init(&h);
    bool db_ok = !x->draining && executor_db_up(x);
    http_ready_check(&h, "database", db_ok ? "ok" : "unreachable", db_ok,
                     x->draining ? "shutting down" : "database unreachable");
    consumer_t *consumers[EXECUTOR_MAX_CONSUMERS];
    size_t nc = executor_consumers(x, consumers);
    for (size_t i = 0; i < nc; i++) {
        char name[64], why[300];
        snprintf(name, sizeof name, "consumer_%s", consumers[i]->name);
        snprintf(why, sizeof why, "not consuming %s", consumers[i]->queue);
        http_ready_check(&h, name, consumers[i]->subscribed ? "ok" : "lost",
                         consumers[i]->subscribed, why);
        snprintf(name, sizeof name, "breaker_consume_%s", consumers[i]->name);
        http_ready_breaker(&h, name, mq_breaker(consumers[i]->mq));
    }
    http_ready_breaker(&h, "breaker_publish", mq_breaker(x->pub));
    http_ready_degraded(&h, "publisher", mq_blocked(x->pub) ? "blocked" : "ok", mq_blocked(x->pub),
                        "the broker blocked publishing (resource alarm): dispatches wait");
    http_ready_reply(r, &h, NULL, NULL);
}

static void on_metrics(http_req_t *r, void *arg)
{
    http_reply_metrics(r, &((executor_t *)arg)->metrics);
}

/* ---- metrics of the executor's own parts ---- */

static void collect_parts(metrics_out_t *o, void *arg)
{
    executor_t *x = arg;
    consumer_t *consumers[EXECUTOR_MAX_CONSUMERS];
    size_t nc = executor_consumers(x, consumers);
    char names[EXECUTOR_MAX_CONSUMERS][64];
    http_breaker_ref_t refs[EXECUTOR_MAX_CONSUMERS + 1] = {{"publish", mq_breaker(x->pub)}};
    for (size_t i = 0; i < nc; i++) {
        snprintf(names[i], sizeof names[i], "consume_%s", consumers[i]->name);
        refs[i + 1] = (http_breaker_ref_t){names[i], mq_breaker(consumers[i]->mq)};
    }
    http_metrics_breakers(o, refs, nc + 1);
    metrics_family(o, "warren_database_errors_total", "counter",
                   "Failed database transactions (lost connections included)");
    metrics_sample_u64(o, "warren_database_errors_total", "", executor_db_errors(x));
    metrics_family(o, "warren_database_up", "gauge",
                   "1 while every database lane of the executor that was used holds its "
                   "connection");
    metrics_sample(o, "warren_database_up", "", executor_db_up(x) ? 1 : 0);
    metrics_family(o, "warren_api_database_waiting", "gauge",
                   "API requests waiting for a database connection of the API");
    metrics_sample(o, "warren_api_database_waiting", "",
                   (double)(x->api_reads.waiting + x->api_writes.waiting));
    metrics_family(o, "warren_api_database_refused_total", "counter",
                   "API requests answered 503 because the API's database connections were busy");
    metrics_sample_u64(o, "warren_api_database_refused_total", "",
                       x->api_reads.refused + x->api_writes.refused);
    metrics_family(o, "warren_http_connections", "gauge", "Open connections to api.listen");
    metrics_sample(o, "warren_http_connections", "", (double)http_connections(x->api));
}

/* ---- start and stop ---- */

static bool loopback_only(const char *listen)
{
    char host[256];
    int port;
    if (http_split_hostport(listen, host, sizeof host, &port) != 0)
        return false;
    return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") || !strcmp(host, "::1");
}

static int add_routes(executor_t *x)
{
    http_server_t *s = x->api;
    const int W = HTTP_WAITS; /* API routes read the database: each request on a fiber */
    return http_route(s, HTTP_GET, "/livez", on_livez, x) ||
           http_route(s, HTTP_GET, "/readyz", on_readyz, x) ||
           http_route(s, HTTP_GET, "/metrics", on_metrics, x) ||
           http_route(s, W | HTTP_GET | HTTP_POST, "/api/v1/executions", api_submit, x) ||
           http_route(s, W | HTTP_GET, "/api/v1/executions/{}", api_get_execution, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/executions/{}/cancel", cancel_handle, x) ||
           http_route(s, W | HTTP_GET, "/api/v1/workers", api_workers, x) ||
           http_route(s, W | HTTP_GET, "/api/v1/dead-letters", api_dl_list, x) ||
           http_route(s, W | HTTP_GET, "/api/v1/dead-letters/stats", api_dl_stats, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/dead-letters/purge", api_dl_purge, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/dead-letters/resolve", api_dl_resolve, x) ||
           http_route(s, W | HTTP_GET | HTTP_PATCH, "/api/v1/dead-letters/{}", api_dl_one, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/dead-letters/{}/redrive", api_dl_redrive, x) ||
           http_route(s, W | HTTP_GET, "/api/v1/staleness", api_staleness, x) ||
           http_route(s, W | HTTP_GET | HTTP_POST, "/api/v1/redrive-tasks", api_redrive_tasks, x) ||
           http_route(s, W | HTTP_GET, "/api/v1/redrive-tasks/{}", api_redrive_task, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/redrive-tasks/{}/cancel", api_redrive_task_cancel,
                      x) ||
           http_route(s, W | HTTP_POST, "/api/v1/executions/{}/retry", retry_handle, x);
}

int api_start(executor_t *x)
{
    const warren_config_t *cfg = x->cfg;
    char err[ERRBUF_SIZE];
    metrics_init(&x->metrics);
    if (stats_register(&x->stats, &x->metrics) != 0 ||
        metrics_add_collector(&x->metrics, collect_parts, x) != 0 ||
        metrics_add_collector(&x->metrics, gauges_collect, x) != 0) {
        log_kv(LOG_ERROR, "out of memory", NULL);
        return -1;
    }
    if (!cfg->api.listen || !*cfg->api.listen) {
        log_kv(LOG_INFO, "api.listen is empty: no HTTP API, health or metrics", NULL);
        return 0;
    }
    if (api_keys_load(&x->keys, cfg, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot load the API keys", "error", err, NULL);
        return -1;
    }
    if (x->keys.n == 0 && !loopback_only(cfg->api.listen)) {
        log_kv(LOG_ERROR,
               "api.listen is not a loopback address and no API key is configured: set "
               "api.keys or api.keys_file",
               "listen", cfg->api.listen, NULL);
        return -1;
    }
    if (x->keys.n == 0)
        log_kv(LOG_WARN,
               "no API keys configured: anyone who can reach api.listen may submit and cancel",
               "listen", cfg->api.listen, NULL);
    http_limits_t limits = {.max_connections = cfg->api.max_connections,
                            .max_header_bytes = (size_t)cfg->api.max_header_bytes,
                            .max_body_bytes = (size_t)cfg->api.max_body_bytes,
                            .read_timeout_s = cfg->api.read_timeout_s,
                            .idle_timeout_s = cfg->api.idle_timeout_s};
    x->api = http_new(x->base, "api", &limits);
    if (!x->api || add_routes(x) != 0) {
        log_kv(LOG_ERROR, "cannot set up the HTTP API", NULL);
        return -1;
    }
    if (http_listen(x->api, cfg->api.listen, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot start the HTTP API", "error", err, NULL);
        return -1;
    }
    char n[16];
    snprintf(n, sizeof n, "%zu", x->keys.n);
    log_kv(LOG_INFO, "api keys loaded", "keys", n, "auth_reads",
           cfg->api.auth_reads ? "true" : "false", NULL);
    return 0;
}

int api_keys_prepare(executor_t *x, const warren_config_t *loaded, char *err, size_t errlen)
{
    api_keys_free(&x->keys_next);
    if (!x->api)
        return 0;
    if (api_keys_load(&x->keys_next, loaded, err, errlen) != 0)
        return -1;
    if (x->keys_next.n == 0 && !loopback_only(x->cfg->api.listen)) {
        api_keys_free(&x->keys_next);
        snprintf(err, errlen,
                 "api.listen %s is not a loopback address and the new configuration names no API "
                 "key (api.keys, api.keys_file)",
                 x->cfg->api.listen);
        return -1;
    }
    return 0;
}

void api_keys_take(executor_t *x)
{
    if (!x->api)
        return;
    api_keys_free(&x->keys);
    x->keys = x->keys_next;
    x->keys_next = (api_keys_t){0};
    char n[16], names[1024] = "";
    size_t o = 0;
    for (size_t i = 0; i < x->keys.n && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s%s:%s", i ? "," : "",
                              x->keys.keys[i].name, api_scope_name(x->keys.keys[i].scope));
    snprintf(n, sizeof n, "%zu", x->keys.n);
    log_kv(LOG_INFO, "api keys reloaded", "keys", n, "names", names, "auth_reads",
           x->cfg->api.auth_reads ? "true" : "false", NULL);
    if (x->keys.n == 0)
        log_kv(LOG_WARN,
               "no API keys configured: anyone who can reach api.listen may submit and cancel",
               "listen", x->cfg->api.listen, NULL);
}

void api_stop(executor_t *x)
{
    http_free(x->api);
    x->api = NULL;
    api_keys_free(&x->keys);
    api_keys_free(&x->keys_next);
    metrics_free(&x->metrics);
}
