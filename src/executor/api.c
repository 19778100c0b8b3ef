/*
 * The executor's HTTP server (api.listen): the route table of docs/api.md, /livez, /readyz and
 * /metrics, and the server's start, stop and keys. API handlers run on fibers (HTTP_WAITS) and
 * take a connection of the API lane for each transaction (api_request.c); health and metrics
 * answer from the loop at once (api_health.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/log.h"

/* ---- start and stop ---- */

static bool loopback_only(const char *listen)
{
    char host[256];
    int port;
    if (http_split_hostport(listen, host, sizeof host, &port) != 0)
        return false;
    return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") || !strcmp(host, "::1");
}

/* HTTPS on api.listen when cfg names a certificate: its context in *out (NULL: plain HTTP).
 * -1 with err when the keys do not go together or a file cannot be used. */
static int tls_load(const warren_config_t *cfg, http_tls_t **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *cert = cfg->api.tls_cert_file, *key = cfg->api.tls_key_file;
    if (!*cert && !*key && !*cfg->api.tls_client_ca_file)
        return 0;
    if (!*cert || !*key) {
        snprintf(err, errlen,
                 "api.tls_cert_file and api.tls_key_file go together (and "
                 "api.tls_client_ca_file needs both): set both or neither");
        return -1;
    }
    const http_tls_files_t f = {
        .cert_file = cert,
        .key_file = key,
        .client_ca_file = cfg->api.tls_client_ca_file,
        .cert_key = "api.tls_cert_file",
        .key_key = "api.tls_key_file",
        .client_ca_key = "api.tls_client_ca_file",
    };
    *out = http_tls_new(&f, err, errlen);
    return *out ? 0 : -1;
}

/* Keys given the old scope "write" work as operate; each is named at every load. */
static void warn_deprecated(const api_keys_t *k)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->keys[i].named_write)
            log_kv(LOG_WARN,
                   "API key scope 'write' is deprecated: it works as 'operate' (no purge, bulk "
                   "resolve or bulk redrive); give the key operate, or admin for those",
                   "key", k->keys[i].name, NULL);
}

static int add_routes(api_t *x)
{
    http_server_t *s = x->server;
    const int W = HTTP_WAITS; /* API routes read the database: each request on a fiber */
    const int Q = HTTP_QUERY; /* their GET handlers check their query parameters */
    return http_route(s, HTTP_GET, "/livez", api_livez, x) ||
           http_route(s, HTTP_GET, "/readyz", api_readyz, x) ||
           http_route(s, HTTP_GET, "/metrics", api_metrics, x) ||
           http_route(s, HTTP_GET, "/api/v1/openapi.json", api_openapi, x) ||
           http_route(s, W | Q | HTTP_GET | HTTP_POST, "/api/v1/executions", api_submit, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/executions/{}", api_get_execution, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/executions/{}/cancel", cancel_handle, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/workers", api_workers, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/dead-letters", api_dl_list, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/dead-letters/stats", api_dl_stats, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/dead-letters/investigation-queue", api_dl_queue,
                      x) ||
           http_route(s, W | HTTP_POST, "/api/v1/dead-letters/purge", api_dl_purge, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/dead-letters/resolve", api_dl_resolve, x) ||
           http_route(s, W | HTTP_GET | HTTP_PATCH, "/api/v1/dead-letters/{}", api_dl_one, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/dead-letters/{}/redrive", api_dl_redrive, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/staleness", api_staleness, x) ||
           http_route(s, W | Q | HTTP_GET | HTTP_POST, "/api/v1/redrive-tasks", api_redrive_tasks,
                      x) ||
           http_route(s, W | HTTP_GET, "/api/v1/redrive-tasks/{}", api_redrive_task, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/redrive-tasks/{}/cancel", api_redrive_task_cancel,
                      x) ||
           http_route(s, W | HTTP_POST, "/api/v1/redrive-tasks/{}/resume", api_redrive_task_resume,
                      x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/redrive-tasks/{}/items", api_redrive_task_items,
                      x) ||
           http_route(s, W | HTTP_POST, "/api/v1/executions/{}/retry", retry_handle, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/executions/{}/investigate", api_investigate, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/executions/{}/complete", api_complete, x) ||
           http_route(s, W | Q | HTTP_GET, "/api/v1/actions", api_actions, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/actions/{}/pause", api_action_pause, x) ||
           http_route(s, W | HTTP_POST, "/api/v1/actions/{}/resume", api_action_resume, x);
}

int api_start(api_t *x)
{
    const warren_config_t *cfg = x->cfg;
    char err[ERRBUF_SIZE];
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
                            .body_budget_bytes = (size_t)cfg->api.body_budget_bytes,
                            .read_timeout_s = cfg->api.read_timeout_s,
                            .header_timeout_s = cfg->api.header_timeout_s,
                            .body_timeout_s = cfg->api.body_timeout_s,
                            .idle_timeout_s = cfg->api.idle_timeout_s};
    x->server = http_new(x->base, "api", &limits);
    if (x->server)
        http_set_gate(x->server, api_gate, x);
    if (!x->server || add_routes(x) != 0) {
        log_kv(LOG_ERROR, "cannot set up the HTTP API", NULL);
        return -1;
    }
    http_tls_t *tls = NULL;
    if (tls_load(cfg, &tls, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot start the HTTP API", "error", err, NULL);
        return -1;
    }
    http_set_tls(x->server, tls);
    if (!tls && !loopback_only(cfg->api.listen))
        log_kv(LOG_WARN,
               "api.listen is not a loopback address and serves plain HTTP: API keys cross the "
               "network in the clear unless TLS ends in front of it (an ingress, a mesh); set "
               "api.tls_cert_file and api.tls_key_file for HTTPS",
               "listen", cfg->api.listen, NULL);
    if (http_listen(x->server, cfg->api.listen, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot start the HTTP API", "error", err, NULL);
        return -1;
    }
    char n[16];
    snprintf(n, sizeof n, "%zu", x->keys.n);
    log_kv(LOG_INFO, "api keys loaded", "keys", n, "auth_reads",
           cfg->api.auth_reads ? "true" : "false", NULL);
    warn_deprecated(&x->keys);
    return 0;
}

int api_keys_prepare(api_t *x, const warren_config_t *loaded, char *err, size_t errlen)
{
    api_keys_free(&x->keys_next);
    http_tls_free(x->tls_next);
    x->tls_next = NULL;
    if (!x->server)
        return 0;
    if (api_keys_load(&x->keys_next, loaded, err, errlen) != 0)
        return -1;
    if (tls_load(loaded, &x->tls_next, err, errlen) != 0) {
        api_keys_free(&x->keys_next);
        return -1;
    }
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

void api_keys_take(api_t *x)
{
    if (!x->server)
        return;
    api_keys_free(&x->keys);
    x->keys = x->keys_next;
    x->keys_next = (api_keys_t){0};
    bool was = http_tls_on(x->server);
    http_set_tls(x->server, x->tls_next); /* the files read again: a renewed certificate */
    x->tls_next = NULL;
    if (was || http_tls_on(x->server))
        log_kv(LOG_INFO, "api TLS files reloaded", "tls", http_tls_on(x->server) ? "on" : "off",
               NULL);
    char n[16], names[1024] = "";
    size_t o = 0;
    for (size_t i = 0; i < x->keys.n && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s%s:%s", i ? "," : "",
                              x->keys.keys[i].name, api_scope_name(x->keys.keys[i].scope));
    snprintf(n, sizeof n, "%zu", x->keys.n);
    log_kv(LOG_INFO, "api keys reloaded", "keys", n, "names", names, "auth_reads",
           x->cfg->api.auth_reads ? "true" : "false", NULL);
    warn_deprecated(&x->keys);
    if (x->keys.n == 0)
        log_kv(LOG_WARN,
               "no API keys configured: anyone who can reach api.listen may submit and cancel",
               "listen", x->cfg->api.listen, NULL);
}

void api_stop(api_t *x)
{
    http_free(x->server);
    x->server = NULL;
    api_keys_free(&x->keys);
    api_keys_free(&x->keys_next);
    http_tls_free(x->tls_next);
    x->tls_next = NULL;
}
