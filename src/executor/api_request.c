/*
 * What every handler of the executor's API shares: authorization, a transaction on the API's
 * database lane with the database's failures turned into HTTP answers, reading JSON bodies,
 * ids in paths, cursors and limits.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/db.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

#define JSON_MAX_DEPTH 64

/* ---- shared by the handlers ---- */

/* The secret of Authorization: Bearer or X-API-Key (either may be NULL); NULL when none. */
static const char *secret_of(const char *auth, const char *key)
{
    if (auth && !strncasecmp(auth, "Bearer ", 7)) {
        auth += 7;
        while (*auth == ' ')
            auth++;
        return *auth ? auth : NULL;
    }
    return key && *key ? key : NULL;
}

static const char *request_secret(http_req_t *r)
{
    return secret_of(http_header(r, "Authorization"), http_header(r, "X-API-Key"));
}

/* Refused on its head, before its body is read: a write (POST, PATCH), or any request with a
 * body, without a write key. Reads and methods no route takes are left to the handlers
 * (api.auth_reads; 404 and 405 before 401). */
int api_gate(const http_head_t *h, void *arg, http_refusal_t *why)
{
    api_t *x = arg;
    bool write = h->method == HTTP_POST || h->method == HTTP_PATCH;
    if (x->keys.n == 0 || (!write && h->content_length == 0))
        return 0;
    const char *secret = secret_of(h->authorization, h->api_key);
    const api_key_t *key = secret ? api_keys_find(&x->keys, secret) : NULL;
    if (!secret)
        *why = (http_refusal_t){401, "unauthorized",
                                "this needs an API key (Authorization: Bearer KEY or X-API-Key: "
                                "KEY)"};
    else if (!key)
        *why = (http_refusal_t){403, "forbidden", "the API key is not valid"};
    else if (key->scope < API_SCOPE_SUBMIT) { /* the route's own scope: its handler checks */
        *why = (http_refusal_t){403, "forbidden", ""};
        snprintf(why->detail, sizeof why->detail,
                 "key '%s' may only read; this needs a key of scope submit, operate or admin",
                 key->name);
    } else
        return 0;
    return -1;
}

bool api_authorize(api_t *x, http_req_t *r, api_scope_t need, char *who, size_t wholen)
{
    bool write = need > API_SCOPE_READ;
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
    if (key->scope < need) {
        http_error(r, 403, "forbidden", "key '%s' has scope %s; this needs %s or above", key->name,
                   api_scope_name(key->scope), api_scope_name(need));
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

bool api_transaction(api_t *x, http_req_t *r, const char *what, dbc_work_fn fn, void *arg)
{
    if (*x->draining)
        return lane_busy(r, "the executor is shutting down");
    dbc_pool_t *pool = r->method == HTTP_GET ? x->api_reads : x->api_writes;
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

bool api_query(api_t *x, http_req_t *r, const char *what, const char *sql, int nparams,
               const char *const *params, PGresult **out)
{
    dbc_query_work_t q = {.sql = sql, .nparams = nparams, .params = params};
    if (api_transaction(x, r, what, dbc_query_fn, &q)) {
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
    char at[160];
    /* json-c names its state "continue" where the text ends inside a value: say that instead */
    snprintf(at, sizeof at, "not valid at byte %zu (%s)", used, json_tokener_error_desc(e));
    const char *why = e == json_tokener_continue && strspn(body, " \t\r\n") == len
                          ? "the body is empty"
                      : e == json_tokener_continue ? "the text ends inside a value"
                      : e != json_tokener_success  ? at
                      : !v                         ? "null is not a submission"
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

bool api_execution_verb(api_t *x, http_req_t *r, const char *what, char *who, size_t wholen,
                        int64_t *id, char *text, size_t textlen)
{
    return api_authorize(x, r, API_SCOPE_OPERATE, who, wholen) &&
           api_execution_id(r, 0, id, text, textlen) && api_no_fields(r, what);
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
