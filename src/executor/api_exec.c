/*
 * The API's executions and workers: submit (one, or up to API_BATCH_MAX in one statement), get
 * one with its history, list with a cursor, the workers. The statements are the CLI's
 * (warren/queries.h), so both print the same documents.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/exec_status.h"
#include "warren/idempotency.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/queries.h"
#include "warren/retry.h"
#include "warren/timestamp.h"
#include "warren/utf8.h"

#define API_BATCH_MAX 1000

/* ---- submit ---- */

/* When, how urgently and how long it may wait (docs/flow-control.md): run_at or delay_s,
 * priority and queue_timeout_s, checked and added to row as q_submit reads them; -1 with
 * err. */
static int schedule(const jf_t *f, const char *at, const char *sep, json_object *row)
{
    const char *run_at = NULL;
    int64_t delay = 0, prio = 0, us = 0, qt = 0;
    int has_delay, has_prio, has_qt;
    if (jf_string(f, "run_at", false, TS_TEXT_MAX, &run_at) < 0 ||
        (has_delay = jf_int(f, "delay_s", false, 0, Q_DELAY_MAX_S, &delay)) < 0 ||
        (has_prio = jf_int(f, "priority", false, Q_PRIORITY_MIN, Q_PRIORITY_MAX, &prio)) < 0 ||
        (has_qt = jf_int(f, "queue_timeout_s", false, 1, QUEUE_TIMEOUT_MAX_S, &qt)) < 0)
        return -1;
    if ((run_at && ts_parse(run_at, &us) != 0) || (run_at && has_delay == 1)) {
        snprintf(f->err, f->errlen, "%s%s%s", at, sep,
                 has_delay == 1 ? "run_at and delay_s: give one of them"
                                : "run_at: expected an RFC 3339 date-time such as "
                                  "2026-05-01T14:00:00Z");
        return -1;
    }
    char text[TS_TEXT_MAX];
    if (run_at) {
        ts_format_us(us, text, sizeof text); /* PostgreSQL reads exactly this instant */
        json_object_object_add(row, "run_at", json_object_new_string(text));
    }
    if (has_delay == 1)
        json_object_object_add(row, "delay_s", json_object_new_int64(delay));
    if (has_prio == 1)
        json_object_object_add(row, "priority", json_object_new_int64(prio));
    if (has_qt == 1)
        json_object_object_add(row, "queue_timeout_s", json_object_new_int64(qt));
    return 0;
}

/* One submission checked and rewritten for q_submit into out (an array); -1 with err. */
static int submission(json_object *in, size_t i, bool batch, json_object *out, char *err,
                      size_t errlen)
{
    char path[32];
    snprintf(path, sizeof path, "[%zu]", i);
    const char *at = batch ? path : "", *sep = batch ? ": " : "";
    jf_t f = {in, batch ? path : NULL, err, errlen};
    static const char *const known[] = {
        "action_ref",      "params",          "worker",      "timeout_s", "max_attempts",
        "retry_on",        "fallback",        "run_at",      "delay_s",   "priority",
        "idempotency_key", "queue_timeout_s", "traceparent", NULL};
    if (!json_object_is_type(in, json_type_object)) {
        snprintf(err, errlen, "%s%sa submission is a JSON object, not %s", at, sep, jf_kind(in));
        return -1;
    }
    json_object_object_foreach(in, key, val) {
        (void)val;
        bool ok = false;
        for (size_t k = 0; known[k] && !ok; k++)
            ok = !strcmp(key, known[k]);
        if (!ok) {
            snprintf(err, errlen,
                     "%s%sunknown field '%.*s' (known: action_ref, params, worker, timeout_s, "
                     "max_attempts, retry_on, fallback, run_at, delay_s, priority, "
                     "queue_timeout_s, idempotency_key, traceparent)",
                     at, sep, utf8_prec(key, 64), key);
            return -1;
        }
    }
    const char *action = NULL, *worker = NULL;
    json_object *params = NULL;
    int64_t timeout = 0;
    int has_timeout;
    if (jf_string(&f, "action_ref", true, ACTION_REF_MAX, &action) < 0 ||
        jf_string(&f, "worker", false, WORKER_ID_MAX, &worker) < 0 ||
        jf_object(&f, "params", false, &params) < 0 ||
        (has_timeout = jf_int(&f, "timeout_s", false, 1, INT32_MAX, &timeout)) < 0)
        return -1;
    const char *retry_on = NULL, *fallback = NULL, *idem = NULL, *trace = NULL;
    int64_t max_attempts = 0;
    int has_max;
    char why[200];
    if ((has_max = jf_int(&f, "max_attempts", false, 1, RETRY_MAX_ATTEMPTS, &max_attempts)) < 0 ||
        jf_string(&f, "retry_on", false, 64, &retry_on) < 0 ||
        jf_string(&f, "fallback", false, 8, &fallback) < 0 ||
        jf_string(&f, "idempotency_key", false, IDEMPOTENCY_KEY_MAX, &idem) < 0 ||
        jf_string(&f, "traceparent", false, IDS_TRACEPARENT_LEN, &trace) < 0)
        return -1;
    if (idem && !ids_idempotency_key_valid(idem)) {
        snprintf(err, errlen, "%s%sidempotency_key: %s", at, sep, IDS_IDEMPOTENCY_KEY_RULE);
        return -1;
    }
    if (trace && !ids_traceparent_valid(trace)) {
        snprintf(err, errlen, "%s%straceparent: %s", at, sep, IDS_TRACEPARENT_RULE);
        return -1;
    }
    unsigned on_bits = 0;
    char on[64];
    if (retry_on && retry_on_parse(retry_on, &on_bits, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s%sretry_on: %s", at, sep, why);
        return -1;
    }
    retry_on_text(on_bits, on, sizeof on); /* as the column stores it */
    if (fallback && strcmp(fallback, "any") != 0) {
        snprintf(err, errlen, "%s%sfallback: the only fallback is \"any\"", at, sep);
        return -1;
    }
    if (!ids_action_ref_valid(action) || (worker && !ids_worker_valid(worker))) {
        snprintf(err, errlen, "%s%s%s", at, sep,
                 !ids_action_ref_valid(action) ? "action_ref: " IDS_ACTION_REF_RULE
                                               : "worker: " IDS_WORKER_RULE);
        return -1;
    }
    json_object *row = json_object_new_object();
    json_object_object_add(row, "action_ref", json_object_new_string(action));
    if (params)
        json_object_object_add(row, "params", json_object_get(params));
    if (worker)
        json_object_object_add(row, "pinned_worker", json_object_new_string(worker));
    if (has_timeout == 1)
        json_object_object_add(row, "timeout_s", json_object_new_int64(timeout));
    if (has_max == 1)
        json_object_object_add(row, "retry_max_attempts", json_object_new_int64(max_attempts));
    if (retry_on)
        json_object_object_add(row, "retry_on", json_object_new_string(on));
    if (fallback)
        json_object_object_add(row, "fallback", json_object_new_string(fallback));
    if (schedule(&f, at, sep, row) != 0) {
        json_object_put(row);
        return -1;
    }
    if (idem)
        json_object_object_add(row, "idempotency_key", json_object_new_string(idem));
    if (trace)
        json_object_object_add(row, "traceparent", json_object_new_string(trace));
    json_object_array_add(out, row);
    return 0;
}

/* How many of rows carry an idempotency key; -1 with err when one key comes twice (one
 * statement cannot both take a key and replay it). */
static int idempotency_keys(json_object *rows, char *err, size_t errlen)
{
    json_object *seen = NULL, *key, *prev;
    int keyed = 0;
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        if (!json_object_object_get_ex(json_object_array_get_idx(rows, i), "idempotency_key", &key))
            continue;
        const char *k = json_object_get_string(key);
        if (!seen && !(seen = json_object_new_object())) {
            snprintf(err, errlen, "out of memory");
            keyed = -1;
        } else if (json_object_object_get_ex(seen, k, &prev)) {
            snprintf(err, errlen, "[%zu]: idempotency_key '%s' is also that of [%d]", i, k,
                     json_object_get_int(prev));
            keyed = -1;
        } else {
            json_object_object_add(seen, k, json_object_new_int((int)i));
            keyed++;
        }
        if (keyed < 0)
            break;
    }
    json_object_put(seen);
    return keyed;
}

int api_submissions(json_object *in, json_object *rows, char *err, size_t errlen)
{
    bool batch = json_object_is_type(in, json_type_array);
    size_t n = batch ? json_object_array_length(in) : 1;
    if (batch && (n == 0 || n > API_BATCH_MAX)) {
        snprintf(err, errlen, "a batch holds 1 to %d submissions, not %zu", API_BATCH_MAX, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (submission(batch ? json_object_array_get_idx(in, i) : in, i, batch, rows, err,
                       errlen) != 0)
            return -1;
    return idempotency_keys(rows, err, errlen);
}

/* The 201 answer: the row for one submission, the ids for a batch. */
static void submitted(http_req_t *r, PGresult *res, bool batch)
{
    if (!batch) {
        char location[64];
        snprintf(location, sizeof location, "/api/v1/executions/%s", PQgetvalue(res, 0, 0));
        http_add_header(r, "Location", location);
        http_reply_json(r, 201, PQgetvalue(res, 0, 2));
        return;
    }
    json_object *body = json_object_new_object(), *ids = json_object_new_array();
    for (int i = 0; i < PQntuples(res); i++)
        json_object_array_add(ids, json_object_new_int64(strtoll(PQgetvalue(res, i, 0), NULL, 10)));
    json_object_object_add(body, "count", json_object_new_int(PQntuples(res)));
    json_object_object_add(body, "ids", ids);
    http_reply_json(r, 201, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
    json_object_put(body);
}

/* The Idempotency-Key header, for one submission: the key of rows[0] unless its body gave
 * another (400). false once answered. */
static bool key_header(http_req_t *r, bool batch, json_object *rows, int *keyed)
{
    const char *h = http_header(r, "Idempotency-Key");
    json_object *row = json_object_array_get_idx(rows, 0), *body_key;
    if (!h)
        return true;
    if (batch)
        http_error(r, 400, "bad_request",
                   "the Idempotency-Key header is for one submission; give each submission of a "
                   "batch its idempotency_key");
    else if (!ids_idempotency_key_valid(h))
        http_error(r, 400, "bad_request", "Idempotency-Key: %s", IDS_IDEMPOTENCY_KEY_RULE);
    else if (json_object_object_get_ex(row, "idempotency_key", &body_key) &&
             strcmp(json_object_get_string(body_key), h) != 0)
        http_error(r, 400, "bad_request",
                   "the Idempotency-Key header and the body's idempotency_key differ");
    else if (!*keyed) {
        json_object_object_add(row, "idempotency_key", json_object_new_string(h));
        *keyed = 1;
    }
    return !r->replied;
}

/* The traceparent header (W3C trace context): the parent of every submission of the request
 * that does not name its own. false once answered (400 for a malformed one). */
static bool trace_header(http_req_t *r, json_object *rows)
{
    const char *h = http_header(r, "traceparent");
    if (!h)
        return true;
    if (!ids_traceparent_valid(h)) {
        http_error(r, 400, "bad_request", "traceparent: %s", IDS_TRACEPARENT_RULE);
        return false;
    }
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        if (!json_object_object_get_ex(row, "traceparent", NULL))
            json_object_object_add(row, "traceparent", json_object_new_string(h));
    }
    return true;
}

typedef struct keyed_submit {
    const char *rows, *who;
    int window_s;
    idem_outcome_t out;
} keyed_submit_t;

static int keyed_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    keyed_submit_t *k = arg;
    idem_outcome_free(&k->out);
    return idem_submit(db, k->rows, k->who, k->window_s, &k->out, err, errlen);
}

/* The answer to submissions with keys: 409 naming the execution of a key in conflict; one:
 * its row, 200 when replayed, else 201; a batch: ids and which were replayed, 200 when all. */
static void keyed_reply(http_req_t *r, const idem_outcome_t *o, bool batch)
{
    PGresult *res = o->res;
    int n = PQntuples(res);
    if (o->conflict >= 0) {
        char at[32] = "";
        if (batch)
            snprintf(at, sizeof at, "[%d]: ", o->conflict);
        const char *id = PQgetvalue(res, o->conflict, 0);
        json_object *body = json_object_new_object();
        json_object_object_add(body, "error", json_object_new_string("conflict"));
        char detail[512];
        snprintf(detail, sizeof detail,
                 "%sthe idempotency key names execution %s, submitted with a different request", at,
                 id);
        json_object_object_add(body, "detail", json_object_new_string(detail));
        json_object_object_add(body, "execution_id", json_object_new_int64(strtoll(id, NULL, 10)));
        if (batch)
            json_object_object_add(body, "index", json_object_new_int(o->conflict));
        http_reply_json(r, 409, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
        json_object_put(body);
        return;
    }
    if (!batch) {
        char location[64];
        snprintf(location, sizeof location, "/api/v1/executions/%s", PQgetvalue(res, 0, 0));
        http_add_header(r, "Location", location);
        http_reply_json(r, o->replayed ? 200 : 201, o->row);
        return;
    }
    json_object *body = json_object_new_object(), *ids = json_object_new_array(),
                *replayed = json_object_new_array();
    for (int i = 0; i < n; i++) {
        json_object_array_add(ids, json_object_new_int64(strtoll(PQgetvalue(res, i, 0), NULL, 10)));
        json_object_array_add(replayed, json_object_new_boolean(PQgetvalue(res, i, 1)[0] == 't'));
    }
    json_object_object_add(body, "count", json_object_new_int(n));
    json_object_object_add(body, "ids", ids);
    json_object_object_add(body, "replayed", replayed);
    http_reply_json(r, o->replayed == n ? 200 : 201,
                    json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
    json_object_put(body);
}

static void submit(api_t *x, http_req_t *r)
{
    char who[API_KEY_NAME_MAX + 1];
    if (!api_authorize(x, r, API_SCOPE_SUBMIT, who, sizeof who))
        return;
    json_object *in = api_body_json(r);
    if (!in)
        return;
    bool batch = json_object_is_type(in, json_type_array);
    json_object *rows = json_object_new_array();
    char err[ERRBUF_SIZE];
    bool ok = rows != NULL;
    int keyed = ok ? api_submissions(in, rows, err, sizeof err) : 0;
    if (keyed < 0) {
        http_error(r, 400, "bad_request", "%s", err);
        ok = false;
    }
    ok = ok && key_header(r, batch, rows, &keyed) && trace_header(r, rows);
    if (ok)
        retry_fill_queue_timeouts(x->cfg, rows); /* actions.<ref>.queue_timeout_s */
    PGresult *res = NULL;
    if (ok && keyed > 0) {
        keyed_submit_t k = {json_object_to_json_string_ext(rows, JSON_C_TO_STRING_PLAIN),
                            who,
                            x->cfg->api.idempotency_window_s,
                            {.conflict = -1}};
        if (api_transaction(x, r, "submitting executions", keyed_fn, &k))
            keyed_reply(r, &k.out, batch);
        idem_outcome_free(&k.out);
    } else if (ok) {
        const char *params[] = {json_object_to_json_string_ext(rows, JSON_C_TO_STRING_PLAIN), who};
        if (api_query(x, r, "submitting executions", q_submit, 2, params, &res))
            submitted(r, res, batch);
    } else if (!r->replied) {
        http_error(r, 503, "unavailable", "out of memory");
    }
    PQclear(res);
    json_object_put(rows);
    json_object_put(in);
}

/* ---- reads ---- */

static bool authorize_read(api_t *x, http_req_t *r)
{
    char who[API_KEY_NAME_MAX + 1];
    return api_authorize(x, r, API_SCOPE_READ, who, sizeof who);
}

void api_get_execution(http_req_t *r, void *arg)
{
    api_t *x = arg;
    int64_t id;
    char id_text[24], factor[16];
    static const char *const allowed[] = {"wait_s", NULL};
    if (!authorize_read(x, r) || !http_query_only(r, allowed) ||
        !api_execution_id(r, 0, &id, id_text, sizeof id_text))
        return;
    const char *wait = http_query(r, "wait_s");
    if (wait) {
        char *end = NULL;
        long secs = strtol(wait, &end, 10);
        if (end == wait || *end || secs < 0 || secs > API_WAIT_MAX_S) {
            http_error(r, 400, "bad_request", "wait_s wants whole seconds from 0 to %d, not '%s'",
                       API_WAIT_MAX_S, wait);
            return;
        }
        if (secs > 0 && !api_wait_end(x, r, id_text, (int)secs))
            return;
    }
    snprintf(factor, sizeof factor, "%d", x->cfg->executor.heartbeat_stale_factor);
    const char *params[] = {id_text, factor};
    PGresult *res = NULL;
    if (!api_query(x, r, "reading an execution", q_execution_doc, 2, params, &res))
        return;
    if (PQntuples(res) == 0)
        http_error(r, 404, "not_found", "no execution %s", id_text);
    else
        http_reply_json(r, 200, PQgetvalue(res, 0, 0));
    PQclear(res);
}

/* A query parameter that is text for a filter: valid UTF-8, no control characters. */
static bool filter_text(http_req_t *r, const char *name, size_t max, const char **out)
{
    const char *v = http_query(r, name);
    *out = NULL;
    if (!v)
        return true;
    size_t len = strlen(v);
    bool ok = len > 0 && len <= max && utf8_valid(v, len, NULL);
    for (size_t i = 0; ok && i < len; i++)
        ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
    if (!ok) {
        http_error(r, 400, "bad_request", "%s must be 1-%zu characters of text", name, max);
        return false;
    }
    *out = v;
    return true;
}

static bool list_params(api_t *x, http_req_t *r, const char **p, char *since, char *cursor,
                        char *limit)
{
    static const char *const allowed[] = {"status", "action", "worker", "since",
                                          "limit",  "cursor", NULL};
    (void)x;
    if (!http_query_only(r, allowed) || !filter_text(r, "status", 32, &p[0]) ||
        !filter_text(r, "action", ACTION_REF_MAX, &p[1]) ||
        !filter_text(r, "worker", WORKER_ID_MAX, &p[2]) || !api_cursor(r, cursor, 24, &p[4]))
        return false;
    exec_status_t st;
    if (p[0] && trans_status_parse(p[0], &st) != 0) {
        http_error(r, 400, "bad_request", "status: unknown status '%s'", p[0]);
        return false;
    }
    const char *s = http_query(r, "since");
    int64_t us;
    if (s && ts_parse(s, &us) != 0) {
        http_error(r, 400, "bad_request",
                   "since: an RFC 3339 date-time, e.g. 2024-05-01T00:00:00Z");
        return false;
    }
    if (s)
        ts_format_us(us, since, TS_TEXT_MAX);
    p[3] = s ? since : NULL;
    if (!api_limit(r, limit, 16))
        return false;
    p[5] = limit;
    return true;
}

void api_list_executions(http_req_t *r, void *arg)
{
    api_t *x = arg;
    const char *p[6];
    char since[TS_TEXT_MAX], cursor[24], limit[16];
    if (!authorize_read(x, r) || !list_params(x, r, p, since, cursor, limit))
        return;
    PGresult *res = NULL;
    if (!api_query(x, r, "listing executions", q_execution_list, 6, p, &res))
        return;
    char next[64];
    api_next_cursor(res, 1, 2, limit, next, sizeof next);
    const char *doc = PQgetvalue(res, 0, 0);
    size_t len = strlen(doc) + 64;
    char *body = malloc(len);
    if (body) {
        snprintf(body, len, "{\"executions\":%s,\"next_cursor\":%s}", doc, next);
        http_reply_json(r, 200, body);
    } else {
        http_error(r, 503, "unavailable", "out of memory");
    }
    free(body);
    PQclear(res);
}

/* GET lists, POST submits: one path, two methods. */
void api_submit(http_req_t *r, void *arg)
{
    if (r->method == HTTP_GET)
        api_list_executions(r, arg);
    else
        submit(arg, r);
}

void api_workers(http_req_t *r, void *arg)
{
    api_t *x = arg;
    static const char *const none[] = {NULL};
    if (!authorize_read(x, r) || !http_query_only(r, none))
        return;
    char factor[16];
    snprintf(factor, sizeof factor, "%d", x->cfg->executor.heartbeat_stale_factor);
    const char *params[] = {factor};
    PGresult *res = NULL;
    if (!api_query(x, r, "listing workers", q_workers, 1, params, &res))
        return;
    const char *doc = PQgetvalue(res, 0, 0);
    size_t len = strlen(doc) + 32;
    char *body = malloc(len);
    if (body) {
        snprintf(body, len, "{\"workers\":%s}", doc);
        http_reply_json(r, 200, body);
    } else {
        http_error(r, 503, "unavailable", "out of memory");
    }
    free(body);
    PQclear(res);
}
