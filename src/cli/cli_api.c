/* The operator commands over the executor's HTTP API (WARREN_API_URL, WARREN_API_KEY). */
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include "cli/cli_api.h"
#include "cli/cli_fmt.h"

#define API_TIMEOUT_S 30
#define WAIT_REQUEST_S 20

const char *cli_api_url(void)
{
    const char *u = getenv("WARREN_API_URL");
    return u && *u ? u : NULL;
}

void cli_operator(char *buf, size_t len)
{
    struct passwd *pw = getpwuid(geteuid());
    const char *user = pw && pw->pw_name ? pw->pw_name : getenv("USER");
    if (user && *user)
        snprintf(buf, len, "cli:%s", user);
    else
        snprintf(buf, len, "cli:uid-%u", (unsigned)geteuid());
}

typedef struct reply {
    int code;
    char *body;
    bool done;
} reply_t;

static void on_reply(struct evhttp_request *req, void *arg)
{
    reply_t *r = arg;
    r->done = true;
    if (!req || !evhttp_request_get_response_code(req))
        return;
    r->code = evhttp_request_get_response_code(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    r->body = malloc(len + 1);
    if (r->body) {
        evbuffer_copyout(in, r->body, len);
        r->body[len] = '\0';
    }
}

/* The API URL's parts: host, port, https or not, and the path prefix (without a trailing "/"). */
static int parse_url(const char *cmd, const char *url, char *host, size_t hostlen, int *port,
                     bool *tls, char *prefix, size_t prefixlen)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    const char *h = u ? evhttp_uri_get_host(u) : NULL;
    *tls = scheme && !strcmp(scheme, "https");
    if (!u || !scheme || (strcmp(scheme, "http") && !*tls) || !h || !*h) {
        fprintf(stderr, "warren %s: WARREN_API_URL must be http[s]://HOST[:PORT][/PREFIX]\n", cmd);
        evhttp_uri_free(u);
        return -1;
    }
    snprintf(host, hostlen, "%s", h);
    *port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : *tls ? 443 : 80;
    const char *p = evhttp_uri_get_path(u);
    snprintf(prefix, prefixlen, "%s", p ? p : "");
    size_t n = strlen(prefix);
    while (n > 0 && prefix[n - 1] == '/')
        prefix[--n] = '\0';
    evhttp_uri_free(u);
    return 0;
}

/*
 * The TLS side of an https:// WARREN_API_URL: the server's certificate verified against
 * WARREN_API_CA (a PEM file) or the system's CAs, and its name against the URL's host; TLS 1.2
 * at least. WARREN_API_INSECURE=1 skips the verification and says so on stderr. NULL (said on
 * stderr) when the CA file cannot be used.
 */
static SSL *tls_client(const char *cmd, const char *host, SSL_CTX **ctx_out)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    *ctx_out = ctx;
    if (!ctx)
        return NULL;
    (void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    const char *ca = getenv("WARREN_API_CA"), *insecure = getenv("WARREN_API_INSECURE");
    bool verify = !(insecure && !strcmp(insecure, "1"));
    if (!verify) {
        fprintf(stderr, "warren %s: WARREN_API_INSECURE=1: the API's certificate is not verified\n",
                cmd);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = ca && *ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
                           : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            char why[256];
            ERR_error_string_n(ERR_get_error(), why, sizeof why);
            fprintf(stderr, "warren %s: WARREN_API_CA %s: %s\n", cmd, ca ? ca : "", why);
            SSL_CTX_free(ctx);
            *ctx_out = NULL; /* said: the caller says nothing more */
            return NULL;
        }
    }
    SSL *ssl = SSL_new(ctx);
    if (!ssl)
        return NULL;
    bool ip = strchr(host, ':') || strspn(host, "0123456789.") == strlen(host);
    if (!ip)
        (void)SSL_set_tlsext_host_name(ssl, host); /* SNI, for a proxy or ingress in front */
    if (verify) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        if (ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1 : SSL_set1_host(ssl, host) != 1) {
            SSL_free(ssl);
            return NULL;
        }
    }
    return ssl;
}

/* Why a TLS connection gave no answer: the certificate check's verdict, else OpenSSL's error. */
static void tls_why(SSL *ssl, struct bufferevent *bev, char *buf, size_t len)
{
    long v = SSL_get_verify_result(ssl);
    unsigned long e = bufferevent_get_openssl_error(bev);
    if (v != X509_V_OK)
        snprintf(buf, len, "the API's certificate: %s", X509_verify_cert_error_string(v));
    else if (e)
        ERR_error_string_n(e, buf, len);
    else
        buf[0] = '\0';
}

int cli_api_request(const char *cmd, const char *method, const char *path, const char *body,
                    char **out)
{
    char host[256], prefix[512];
    int port;
    bool tls;
    *out = NULL;
    if (parse_url(cmd, cli_api_url(), host, sizeof host, &port, &tls, prefix, sizeof prefix) != 0)
        return -1;
    struct event_base *base = event_base_new();
    SSL_CTX *ctx = NULL;
    SSL *ssl = base && tls ? tls_client(cmd, host, &ctx) : NULL;
    struct bufferevent *bev = ssl ? bufferevent_openssl_socket_new(base, -1, ssl,
                                                                   BUFFEREVENT_SSL_CONNECTING,
                                                                   BEV_OPT_CLOSE_ON_FREE)
                                  : NULL;
    if (bev) /* most servers close without close_notify once they have answered */
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    else if (ssl)
        SSL_free(ssl);
    struct evhttp_connection *conn = !base || (tls && !bev)
                                         ? NULL
                                         : evhttp_connection_base_bufferevent_new(
                                               base, NULL, bev, host, (uint16_t)port);
    reply_t r = {0};
    struct evhttp_request *req = conn ? evhttp_request_new(on_reply, &r) : NULL;
    if (!req) {
        if (!tls || ctx)
            fprintf(stderr, "warren %s: cannot set up the request to the API\n", cmd);
        if (conn)
            evhttp_connection_free(conn);
        else if (bev)
            bufferevent_free(bev);
        SSL_CTX_free(ctx);
        if (base)
            event_base_free(base);
        return -1;
    }
    evhttp_connection_set_timeout(conn, API_TIMEOUT_S);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", host);
    evhttp_add_header(h, "Accept", "application/json");
    evhttp_add_header(h, "Connection", "close");
    const char *key = getenv("WARREN_API_KEY");
    if (key && *key)
        evhttp_add_header(h, "X-API-Key", key);
    if (body) {
        evhttp_add_header(h, "Content-Type", "application/json");
        /* libevent adds it for POST and PUT only; a PATCH body would go unannounced */
        char length[24];
        snprintf(length, sizeof length, "%zu", strlen(body));
        evhttp_add_header(h, "Content-Length", length);
        evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    }
    char full[2048];
    snprintf(full, sizeof full, "%s%s", prefix, path);
    enum evhttp_cmd_type type = !strcmp(method, "POST")    ? EVHTTP_REQ_POST
                                : !strcmp(method, "PATCH") ? EVHTTP_REQ_PATCH
                                                           : EVHTTP_REQ_GET;
    if (evhttp_make_request(conn, req, type, full) == 0)
        while (!r.done && event_base_loop(base, EVLOOP_ONCE) == 0)
            ;
    char why[300] = "";
    if (!r.code && tls)
        tls_why(bufferevent_openssl_get_ssl(bev), bev, why, sizeof why);
    evhttp_connection_free(conn); /* and bev, and its SSL */
    SSL_CTX_free(ctx);
    event_base_free(base);
    if (!r.code) {
        fprintf(stderr, "warren %s: no answer from the API at %s%s%s\n", cmd, cli_api_url(),
                why[0] ? ": " : "", why);
        free(r.body);
        return -1;
    }
    *out = r.body ? r.body : strdup("");
    return r.code;
}

void cli_api_report(const char *cmd, int code, const char *body)
{
    json_object *o = json_tokener_parse(body ? body : "");
    json_object *d = NULL, *e = NULL;
    bool has_error = o && json_object_object_get_ex(o, "error", &e) && e;
    if (o && json_object_object_get_ex(o, "detail", &d) && json_object_is_type(d, json_type_string))
        fprintf(stderr, "warren %s: %s (HTTP %d%s%s)\n", cmd, json_object_get_string(d), code,
                has_error ? " " : "", has_error ? json_object_get_string(e) : "");
    else
        fprintf(stderr, "warren %s: the API answered HTTP %d\n", cmd, code);
    json_object_put(o);
}

json_object *cli_api_json(const char *cmd, const char *body)
{
    json_object *o = json_tokener_parse(body);
    if (!o)
        fprintf(stderr, "warren %s: the API's answer is not JSON\n", cmd);
    return o;
}

char *cli_execution_row(const char *doc)
{
    json_object *o = json_tokener_parse(doc);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    json_object_object_del(o, "events");
    json_object_object_del(o, "dead_letters");
    char *text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED));
    json_object_put(o);
    return text;
}

/* ---- reading answers ---- */

static const char *field(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return NULL;
    return json_object_get_string(v);
}

/* GET path; the parsed answer, or NULL after reporting (an exit code in *rc). */
static json_object *get_json(const char *cmd, const char *path, int *rc)
{
    char *body = NULL;
    int code = cli_api_request(cmd, "GET", path, NULL, &body);
    json_object *o = NULL;
    if (code == 200)
        o = cli_api_json(cmd, body);
    else if (code > 0)
        cli_api_report(cmd, code, body);
    *rc = o ? EXIT_OK : EXIT_RUNTIME;
    free(body);
    return o;
}

/* A table from an array of objects: one column per key. */
static int print_table(json_object *rows, const char *const *keys, const char *const *heads,
                       size_t ncols)
{
    cli_table_t t;
    if (cli_table_init(&t, ncols, heads) != 0)
        return -1;
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        const char *cells[16];
        for (size_t c = 0; c < ncols; c++)
            cells[c] = field(row, keys[c]);
        if (cli_table_add(&t, cells) != 0) {
            cli_table_free(&t);
            return -1;
        }
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
    return 0;
}

/* ---- commands ---- */

/* --wait: GET ?wait_s= answers when the execution ends (docs/api.md, "Waiting for the end"),
 * at most this long per request, well inside API_TIMEOUT_S. */
static int wait_for(const char *id, bool json, int64_t wait_timeout_s)
{
    int64_t deadline = wait_timeout_s ? now_mono_ms() + wait_timeout_s * 1000 : INT64_MAX;
    for (;;) {
        int64_t left_ms = deadline - now_mono_ms();
        int64_t wait_s = left_ms <= 0                      ? 0
                         : left_ms > WAIT_REQUEST_S * 1000 ? WAIT_REQUEST_S
                                                           : (left_ms + 999) / 1000;
        char path[96];
        snprintf(path, sizeof path, "/api/v1/executions/%s?wait_s=%" PRId64, id, wait_s);
        int rc;
        json_object *doc = get_json("submit", path, &rc);
        if (!doc)
            return rc;
        const char *status = field(doc, "status");
        bool final = cli_status_terminal(status);
        if (final || now_mono_ms() >= deadline) {
            if (json) {
                char *row = cli_execution_row(json_object_to_json_string(doc));
                printf("%s\n", row ? row : "{}");
                free(row);
            } else {
                printf("status: %s\n", status ? status : "?");
                if (field(doc, "result"))
                    printf("result: %s\n", field(doc, "result"));
                if (field(doc, "error"))
                    printf("error: %s\n", field(doc, "error"));
            }
            rc = status && !strcmp(status, "completed") ? EXIT_OK : EXIT_RUNTIME;
            if (!final)
                fprintf(stderr, "warren submit: execution %s still %s after waiting %" PRId64 "s\n",
                        id, status, wait_timeout_s);
            json_object_put(doc);
            return rc;
        }
        json_object_put(doc);
    }
}

int cli_api_submit(json_object *req, bool json, bool wait, int64_t wait_timeout_s)
{
    char *body = NULL;
    int code = cli_api_request("submit", "POST", "/api/v1/executions",
                               json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), &body);
    bool ok = code == 201 || code == 200; /* 200: an idempotency key's replay */
    json_object *row = ok ? cli_api_json("submit", body) : NULL;
    if (code > 0 && !ok)
        cli_api_report("submit", code, body);
    if (!row) {
        free(body);
        return EXIT_RUNTIME;
    }
    char id[24];
    snprintf(id, sizeof id, "%s", field(row, "id") ? field(row, "id") : "");
    if (code == 200)
        fprintf(stderr,
                "warren submit: the idempotency key names execution %s, submitted before; "
                "nothing new was submitted\n",
                id);
    if (!json || !wait) /* the row as the database wrote it, as on the database path */
        printf("%s\n", json ? body : id);
    free(body);
    json_object_put(row);
    (void)fflush(stdout);
    return wait ? wait_for(id, json, wait_timeout_s) : EXIT_OK;
}

static void print_get(json_object *doc)
{
    static const char *const lines[][2] = {
        {"action", "action_ref"},
        {"status", "status"},
        {"wait reason", "wait_reason"},
        {"worker", "worker"},
        {"pinned worker", "pinned_worker"},
        {"attempt", "attempt"},
        {"timeout", "timeout_s"},
        {"priority", "priority"},
        {"due", "due_at"},
        {"created", "created_at"},
        {"scheduled", "scheduled_at"},
        {"started", "started_at"},
        {"ended", "ended_at"},
        {"updated", "updated_at"},
        {"submitted by", "submitted_by"},
        {"cancelled by", "cancelled_by"},
        {"retries", "retries"},
        {"manual retries", "manual_retries"},
        {"params", "params"},
        {"result", "result"},
        {"error", "error"},
        {"outcome", "outcome"},
    };
    printf("execution %s\n", field(doc, "id"));
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *v = field(doc, lines[i][1]);
        printf("  %-14s %s\n", lines[i][0], v ? v : "-");
    }
    json_object *events = NULL, *dls = NULL;
    static const char *const ek[] = {"at",      "from_status", "to_status", "worker",
                                     "attempt", "error",       "note"};
    static const char *const eh[] = {"AT", "FROM", "TO", "WORKER", "ATTEMPT", "ERROR", "NOTE"};
    static const char *const dk[] = {"id", "received_at", "reason", "queue", "resolution", "error"};
    static const char *const dh[] = {"ID", "RECEIVED", "REASON", "QUEUE", "RESOLUTION", "ERROR"};
    if (json_object_object_get_ex(doc, "events", &events)) {
        printf("\nhistory (%zu)\n", json_object_array_length(events));
        if (json_object_array_length(events))
            (void)print_table(events, ek, eh, 7);
    }
    if (json_object_object_get_ex(doc, "dead_letters", &dls)) {
        printf("\ndead letters (%zu)\n", json_object_array_length(dls));
        if (json_object_array_length(dls))
            (void)print_table(dls, dk, dh, 6);
    }
    static const char *const ak[] = {"attempt", "kind",     "worker",   "started_at", "ended_at",
                                     "outcome", "decision", "delay_ms", "error"};
    static const char *const ah[] = {"ATTEMPT", "KIND",     "WORKER",   "STARTED", "ENDED",
                                     "OUTCOME", "DECISION", "DELAY MS", "ERROR"};
    json_object *atts = NULL;
    if (json_object_object_get_ex(doc, "attempts", &atts)) {
        printf("\nattempts (%zu)\n", json_object_array_length(atts));
        if (json_object_array_length(atts))
            (void)print_table(atts, ak, ah, 9);
    }
}

/*
 * GET path and print the JSON document inside its answer: the answer minus prefix and suffix,
 * which the API writes around the database's text (api_exec.c), so the bytes are the ones the
 * database path prints. "" for both: the whole answer.
 */
static int print_raw(const char *cmd, const char *path, const char *prefix, const char *suffix)
{
    char *body = NULL;
    int code = cli_api_request(cmd, "GET", path, NULL, &body);
    if (code != 200) {
        if (code > 0)
            cli_api_report(cmd, code, body);
        free(body);
        return EXIT_RUNTIME;
    }
    size_t len = strlen(body), pl = strlen(prefix);
    const char *end = body + len;
    if (*suffix) { /* the last one: the document itself may hold the same text */
        end = NULL;
        for (const char *p = strstr(body, suffix); p; p = strstr(p + 1, suffix))
            end = p;
    }
    if (strncmp(body, prefix, pl) || !end || end < body + pl) {
        fprintf(stderr, "warren %s: unexpected answer from the API\n", cmd);
        free(body);
        return EXIT_RUNTIME;
    }
    printf("%.*s\n", (int)(end - body - pl), body + pl);
    free(body);
    return EXIT_OK;
}

int cli_api_get(const char *id, bool json)
{
    char path[64];
    snprintf(path, sizeof path, "/api/v1/executions/%s", id);
    if (json)
        return print_raw("get", path, "", "");
    int rc;
    json_object *doc = get_json("get", path, &rc);
    if (!doc)
        return rc;
    print_get(doc);
    json_object_put(doc);
    return EXIT_OK;
}

int cli_api_list(const char *status, const char *limit, bool json)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/executions?limit=%s%s%s", limit, status ? "&status=" : "",
             status ? status : "");
    if (json)
        return print_raw("list", path, "{\"executions\":", ",\"next_cursor\":");
    int rc;
    json_object *doc = get_json("list", path, &rc), *rows = NULL;
    if (!doc)
        return rc;
    if (!json_object_object_get_ex(doc, "executions", &rows) || !rows) {
        fprintf(stderr, "warren list: the API's answer has no executions\n");
        rc = EXIT_RUNTIME;
    } else {
        static const char *const k[] = {"id",      "action_ref", "status", "worker",
                                        "attempt", "created_at", "error"};
        static const char *const h[] = {"ID",      "ACTION",  "STATUS", "WORKER",
                                        "ATTEMPT", "CREATED", "ERROR"};
        rc = print_table(rows, k, h, 7) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    json_object_put(doc);
    return rc;
}

int cli_api_workers(bool json)
{
    if (json)
        return print_raw("workers", "/api/v1/workers", "{\"workers\":", "}");
    int rc;
    json_object *doc = get_json("workers", "/api/v1/workers", &rc), *rows = NULL;
    if (!doc)
        return rc;
    if (!json_object_object_get_ex(doc, "workers", &rows) || !rows) {
        fprintf(stderr, "warren workers: the API's answer has no workers\n");
        rc = EXIT_RUNTIME;
    } else {
        static const char *const k[] = {"id",        "status",          "state",       "capacity",
                                        "in_flight", "heartbeat_age_s", "capabilities"};
        static const char *const h[] = {"ID",        "STATUS",        "STATE",       "CAPACITY",
                                        "IN FLIGHT", "HEARTBEAT AGE", "CAPABILITIES"};
        rc = print_table(rows, k, h, 7) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    json_object_put(doc);
    return rc;
}

/* POST /api/v1/executions/ID/VERB (cancel, retry): the row, printed as JSON or its status. */
static int post_verb(const char *verb, const char *id, bool json)
{
    char path[64], *body = NULL;
    snprintf(path, sizeof path, "/api/v1/executions/%s/%s", id, verb);
    int code = cli_api_request(verb, "POST", path, NULL, &body);
    json_object *row = code == 200 || code == 202 ? cli_api_json(verb, body) : NULL;
    if (code > 0 && code != 200 && code != 202)
        cli_api_report(verb, code, body);
    if (row && json)
        printf("%s\n", body);
    else if (row)
        printf("execution %s: %s\n", id, field(row, "status"));
    free(body);
    json_object_put(row);
    return row ? EXIT_OK : EXIT_RUNTIME;
}

int cli_api_cancel(const char *id, bool json)
{
    return post_verb("cancel", id, json);
}

int cli_api_retry(const char *id, bool json)
{
    return post_verb("retry", id, json);
}
