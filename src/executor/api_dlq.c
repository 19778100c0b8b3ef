/*
 * /api/v1/dead-letters (docs/dead-letters.md, docs/api.md): list, stats, show, PATCH, redrive,
 * purge and the bulk resolve. The filters, statements and the redrive are the CLI's
 * (warren/dlq.h), so `warren dlq --json` prints the same documents either way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/db.h"
#include "warren/dlq.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

static const char *const filter_keys[] = {"resolution", "reason", "queue", "action", "execution_id",
                                          "since",      "until",  "q",     NULL};

/* The query string's filter as the statements take it (JSON text into *text, which the
 * caller frees); false after answering 400. */
static bool query_filter(http_req_t *r, const char *const *allowed, char **text)
{
    if (!http_query_only(r, allowed))
        return false;
    json_object *in = json_object_new_object();
    for (size_t i = 0; filter_keys[i]; i++) {
        const char *v = http_query(r, filter_keys[i]);
        if (v)
            json_object_object_add(in, filter_keys[i], json_object_new_string(v));
    }
    char err[ERRBUF_SIZE];
    json_object *f = dlq_filter(in, false, err, sizeof err);
    json_object_put(in);
    if (!f) {
        http_error(r, 400, "bad_request", "%s", err);
        return false;
    }
    *text = strdup(json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN));
    json_object_put(f);
    return true;
}

/* The record id of the path; false after answering 400. */
static bool record_id(http_req_t *r, int64_t *id, char *text, size_t len)
{
    return api_path_id(r, 0, "a dead letter", id, text, len);
}

void api_reply_page(http_req_t *r, const char *doc, const char *next)
{
    size_t len = strlen(doc) + strlen(next) + 32;
    char *body = malloc(len);
    if (!body) {
        http_error(r, 503, "unavailable", "out of memory");
        return;
    }
    snprintf(body, len, "{\"items\":%s,\"next_cursor\":%s}", doc, next);
    http_reply_json(r, 200, body);
    free(body);
}

/* A listing or a count under a filter, planned for the filter's values. The executor's session
 * keeps prepared statements (a generic plan after a few runs would keep every filter condition
 * and use no index: schema 027 relies on the values folding the unused ones away) and turns
 * sorts off for its claim (dbconn.c), which would make a search read the whole table newest
 * first rather than sort the trigram index's few matches: this transaction undoes both. */
typedef struct filtered_work {
    const char *sql;
    int nparams;
    const char *const *params;
    PGresult *res;
} filtered_work_t;

static int filtered_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    filtered_work_t *w = arg;
    PGresult *res = NULL;
    PQclear(w->res);
    w->res = NULL;
    if (db_exec(db,
                "SELECT set_config('plan_cache_mode', 'force_custom_plan', true),"
                " set_config('enable_sort', 'on', true)",
                0, NULL, &res, err, errlen) != 0)
        return -1;
    PQclear(res);
    return db_exec(db, w->sql, w->nparams, w->params, &w->res, err, errlen);
}

/* api_query for filtered_fn's statements. */
static bool filtered_query(api_t *x, http_req_t *r, const char *what, const char *sql, int nparams,
                           const char *const *params, PGresult **out)
{
    filtered_work_t w = {.sql = sql, .nparams = nparams, .params = params};
    if (api_transaction(x, r, what, filtered_fn, &w)) {
        *out = w.res;
        return true;
    }
    PQclear(w.res);
    return false;
}

void api_dl_list(http_req_t *r, void *arg)
{
    api_t *x = arg;
    static const char *const allowed[] = {"resolution",   "reason", "queue", "action",
                                          "execution_id", "since",  "until", "q",
                                          "limit",        "cursor", NULL};
    char who[API_KEY_NAME_MAX + 1], limit[16], below[24];
    const char *cursor = NULL;
    char *filter = NULL;
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) ||
        !api_limit(r, limit, sizeof limit) || !api_cursor(r, below, sizeof below, &cursor) ||
        !query_filter(r, allowed, &filter))
        return;
    if (cursor) { /* the cursor is one more filter member: ids below it */
        json_object *f = json_tokener_parse(filter);
        json_object_object_add(f, "below", json_object_new_string(cursor));
        free(filter);
        filter = strdup(json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN));
        json_object_put(f);
    }
    const char *p[] = {filter, limit};
    PGresult *res = NULL;
    if (filter && filtered_query(x, r, "listing dead letters", q_dl_list, 2, p, &res)) {
        char next[64];
        api_next_cursor(res, 1, 2, limit, next, sizeof next);
        api_reply_page(r, PQgetvalue(res, 0, 0), next);
    } else if (!filter && !r->replied) {
        http_error(r, 503, "unavailable", "out of memory");
    }
    PQclear(res);
    free(filter);
}

void api_dl_stats(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1];
    char *filter = NULL;
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) ||
        !query_filter(r, filter_keys, &filter))
        return;
    const char *p[] = {filter};
    PGresult *res = NULL;
    if (filtered_query(x, r, "counting dead letters", q_dl_stats, 1, p, &res))
        http_reply_json(r, 200, PQgetvalue(res, 0, 0));
    PQclear(res);
    free(filter);
}

static void show(api_t *x, http_req_t *r, const char *id)
{
    const char *p[] = {id};
    PGresult *res = NULL;
    if (!api_query(x, r, "reading a dead letter", q_dl_show, 1, p, &res))
        return;
    if (PQntuples(res) == 0)
        http_error(r, 404, "not_found", "no dead letter %s", id);
    else
        http_reply_json(r, 200, PQgetvalue(res, 0, 0));
    PQclear(res);
}

static void patch(api_t *x, http_req_t *r, const char *id)
{
    char who[API_KEY_NAME_MAX + 1], err[ERRBUF_SIZE];
    if (!api_authorize(x, r, API_SCOPE_OPERATE, who, sizeof who))
        return;
    json_object *in = api_body_json(r);
    if (!in)
        return;
    if (dlq_patch_check(in, err, sizeof err) != 0) {
        http_error(r, 400, "bad_request", "%s", err);
        json_object_put(in);
        return;
    }
    const char *p[] = {id, json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN), who};
    PGresult *res = NULL;
    if (api_query(x, r, "updating a dead letter", q_dl_patch, 3, p, &res)) {
        if (PQntuples(res) == 0) {
            http_error(r, 404, "not_found", "no dead letter %s", id);
        } else {
            log_kv(LOG_INFO, "dead letter updated", "id", id, "by", who, "change", p[1], NULL);
            http_reply_json(r, 200, PQgetvalue(res, 0, 0));
        }
    }
    PQclear(res);
    json_object_put(in);
}

void api_dl_one(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id_text[24];
    int64_t id;
    if (r->method == HTTP_GET && !api_authorize(x, r, API_SCOPE_READ, who, sizeof who))
        return;
    if (!record_id(r, &id, id_text, sizeof id_text))
        return;
    if (r->method == HTTP_GET)
        show(x, r, id_text);
    else
        patch(x, r, id_text);
}

typedef struct redrive_work {
    int64_t id;
    const char *worker, *by;
    bool unpin;
    int max_redrives; /* dead_letter.max_redrives */
    dlq_redrive_result_t result;
    char *doc;
    char why[300];
} redrive_work_t;

static int redrive_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    redrive_work_t *w = arg;
    free(w->doc);
    w->doc = NULL;
    return dlq_redrive(db, w->id, w->worker, w->unpin, w->max_redrives, w->by, &w->result, &w->doc,
                       w->why, sizeof w->why, err, errlen);
}

/* The optional body {"worker": ID} or {"unpin": true}; false after answering 400. */
static bool redrive_body(http_req_t *r, json_object **in, const char **worker, bool *unpin)
{
    char err[ERRBUF_SIZE];
    *in = NULL;
    if (r->body_len == 0 || strspn(r->body, " \t\r\n") == r->body_len)
        return true;
    if (!(*in = api_body_json(r)))
        return false;
    static const char *const known[] = {"worker", "unpin", NULL};
    bool ok = api_fields(*in, known, err, sizeof err) == 0 &&
              api_pin(*in, worker, unpin, err, sizeof err) == 0;
    if (!ok)
        http_error(r, 400, "bad_request", "%s", err);
    return ok;
}

void api_dl_redrive(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id_text[24];
    redrive_work_t w = {.by = who, .max_redrives = x->cfg->dead_letter.max_redrives};
    json_object *in = NULL;
    if (!api_authorize(x, r, API_SCOPE_OPERATE, who, sizeof who) ||
        !record_id(r, &w.id, id_text, sizeof id_text) ||
        !redrive_body(r, &in, &w.worker, &w.unpin)) {
        json_object_put(in);
        return;
    }
    if (api_transaction(x, r, "redriving a dead letter", redrive_fn, &w)) {
        if (w.result == DLQ_REDRIVEN) {
            x->stats->dead_letters_redriven++;
            log_kv(LOG_INFO, "dead letter redriven", "id", id_text, "by", who, NULL);
            http_reply_json(r, 200, w.doc);
        } else if (w.result == DLQ_NOT_FOUND) {
            http_error(r, 404, "not_found", "%s", w.why);
        } else if (w.result == DLQ_MAX_REDRIVES) {
            http_error(r, 409, "max_redrives", "%s", w.why);
        } else {
            http_error(r, 409, "conflict", "%s", w.why);
        }
    }
    free(w.doc);
    json_object_put(in);
}

/* What purge and resolve take: {"filter": {...}, "expected_count": N} or {"filter": {...},
 * "dry_run": true}, and the members in `extra`. */
typedef struct bulk_body {
    json_object *in;     /* the body (owned) */
    json_object *filter; /* dlq_filter's, ids allowed (owned) */
    int64_t expected;    /* -1 on a dry run */
    bool dry_run;
    char count[24]; /* expected as text */
} bulk_body_t;

static void bulk_free(bulk_body_t *b)
{
    json_object_put(b->filter);
    json_object_put(b->in);
}

/* The body's filter and count, members known[] allowed; the filter's resolution must be open
 * (open_only) or closed (!open_only), as `what` acts only on those. 0, or -1 with err (400). */
static int bulk_parse(bulk_body_t *b, const char *const *known, bool open_only, const char *what,
                      char *err, size_t errlen)
{
    jf_t f = {b->in, NULL, err, errlen};
    json_object *fin = NULL, *dry = NULL;
    int has_expected = 0, has_dry = 0;
    b->expected = -1;
    if (api_fields(b->in, known, err, errlen) != 0 || jf_object(&f, "filter", false, &fin) < 0 ||
        (has_expected = jf_int(&f, "expected_count", false, 0, INT64_MAX, &b->expected)) < 0 ||
        (has_dry = jf_value(&f, "dry_run", false, &dry)) < 0)
        return -1;
    b->dry_run = has_dry && json_object_get_boolean(dry);
    if (has_dry && !json_object_is_type(dry, json_type_boolean))
        return snprintf(err, errlen, "dry_run: true or false"), -1;
    if (!has_expected && !b->dry_run)
        return snprintf(err, errlen,
                        "give expected_count (the number of records to %s) or dry_run: true",
                        open_only ? "resolve" : "delete"),
               -1;
    if (!(b->filter = dlq_filter(fin, true, err, errlen)))
        return -1;
    snprintf(b->count, sizeof b->count, "%" PRId64, b->expected);
    json_object *v;
    const char *res = json_object_object_get_ex(b->filter, "resolution", &v)
                          ? json_object_get_string(v)
                          : NULL;
    if (res && open_only == dlq_resolution_closed(res))
        return snprintf(err, errlen, "%s %s records only, never %s ones", what,
                        open_only ? "closes open" : "deletes closed", res),
               -1;
    return 0;
}

/* {"filter": {...}, "expected_count": N} or {"filter": {...}, "dry_run": true}. */
void api_dl_purge(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], err[ERRBUF_SIZE] = "";
    if (!api_authorize(x, r, API_SCOPE_ADMIN, who, sizeof who))
        return;
    bulk_body_t b = {.in = api_body_json(r)};
    if (!b.in)
        return;
    static const char *const known[] = {"filter", "expected_count", "dry_run", NULL};
    if (bulk_parse(&b, known, false, "purge", err, sizeof err) != 0) {
        http_error(r, 400, "bad_request", "%s", err);
    } else {
        const char *p[] = {json_object_to_json_string_ext(b.filter, JSON_C_TO_STRING_PLAIN),
                           b.dry_run ? NULL : b.count};
        PGresult *res = NULL;
        if (api_query(x, r, "purging dead letters", q_dl_purge, 2, p, &res)) {
            const char *matched = PQgetvalue(res, 0, 0), *deleted = PQgetvalue(res, 0, 1);
            char body[160];
            snprintf(body, sizeof body, "{\"matched\":%s,\"deleted\":%s,\"dry_run\":%s}", matched,
                     deleted, b.dry_run ? "true" : "false");
            if (!b.dry_run && strcmp(matched, b.count)) {
                http_error(r, 409, "conflict",
                           "expected_count is %s but %s closed records match: nothing deleted",
                           b.count, matched);
            } else {
                if (!b.dry_run)
                    log_kv(LOG_INFO, "dead letters purged", "deleted", deleted, "by", who, "filter",
                           p[0], NULL);
                http_reply_json(r, 200, body);
            }
        }
        PQclear(res);
    }
    bulk_free(&b);
}

/* The resolution and notes of a bulk resolve; the note recorded names who did it. 0, or -1
 * with err. */
static int resolve_fields(json_object *in, const char *who, const char **resolution, char *note,
                          size_t notelen, char *err, size_t errlen)
{
    jf_t f = {in, NULL, err, errlen};
    const char *notes = NULL;
    if (jf_string(&f, "resolution", true, 64, resolution) < 0 ||
        jf_string(&f, "notes", false, 10000, &notes) < 0)
        return -1;
    if (!dlq_resolution_closed(*resolution))
        return snprintf(err, errlen,
                        "resolution: manually_resolved, permanent_failure or cancelled (a bulk "
                        "resolve closes records), not '%.*s'",
                        utf8_prec(*resolution, 64), *resolution),
               -1;
    dlq_resolve_note(note, notelen, who, notes);
    return 0;
}

/* {"filter": {...}, "resolution": R, "notes": TEXT, "expected_count": N | "dry_run": true}:
 * close the open records the filter matches, if they are exactly N. */
void api_dl_resolve(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], err[ERRBUF_SIZE] = "", note[10200];
    if (!api_authorize(x, r, API_SCOPE_ADMIN, who, sizeof who))
        return;
    bulk_body_t b = {.in = api_body_json(r)};
    if (!b.in)
        return;
    static const char *const known[] = {"filter",     "expected_count", "dry_run",
                                        "resolution", "notes",          NULL};
    const char *resolution = NULL;
    if (bulk_parse(&b, known, true, "resolve", err, sizeof err) != 0 ||
        resolve_fields(b.in, who, &resolution, note, sizeof note, err, sizeof err) != 0) {
        http_error(r, 400, "bad_request", "%s", err);
        bulk_free(&b);
        return;
    }
    const char *p[] = {json_object_to_json_string_ext(b.filter, JSON_C_TO_STRING_PLAIN),
                       b.dry_run ? NULL : b.count, resolution, who, note};
    PGresult *res = NULL;
    if (api_query(x, r, "resolving dead letters", q_dl_resolve, 5, p, &res)) {
        const char *matched = PQgetvalue(res, 0, 0), *resolved = PQgetvalue(res, 0, 1);
        char body[200];
        snprintf(body, sizeof body,
                 "{\"matched\":%s,\"resolved\":%s,\"resolution\":\"%s\",\"dry_run\":%s}", matched,
                 resolved, resolution, b.dry_run ? "true" : "false");
        if (!b.dry_run && strcmp(matched, b.count)) {
            http_error(r, 409, "conflict",
                       "expected_count is %s but %s open records match: nothing resolved", b.count,
                       matched);
        } else {
            if (!b.dry_run)
                log_kv(LOG_INFO, "dead letters resolved in bulk", "resolved", resolved,
                       "resolution", resolution, "by", who, "filter", p[0], NULL);
            http_reply_json(r, 200, body);
        }
    }
    PQclear(res);
    bulk_free(&b);
}
