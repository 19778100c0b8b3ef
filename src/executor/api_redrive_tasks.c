/* The HTTP API of bulk redrive tasks (docs/api.md): POST/GET /api/v1/redrive-tasks, GET .../{id},
 * GET .../{id}/items, POST .../{id}/cancel and .../{id}/resume; redrive_tasks.c runs them. */
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

typedef struct create_work {
    const char *params[8];
    PGresult *res;
    PGresult *active;
} create_work_t;

static int create_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    create_work_t *w = arg;
    if (db_exec(db, q_rt_create, 8, w->params, &w->res, err, errlen) != 0)
        return -1;
    if (PQntuples(w->res) > 0)
        return 0;
    return db_exec(db, q_rt_active, 1, &w->params[1], &w->active, err, errlen);
}

/* What a task is asked to do. */
typedef struct task_spec {
    json_object *filter; /* dlq_filter's (owned) */
    int64_t rate, canary;
    double ratio; /* max_failure_ratio */
    const char *worker;
    bool unpin;
} task_spec_t;

/* max_failure_ratio: a number from 0 to 1, only with a canary; 0 or -1 with err. */
static int failure_ratio(json_object *in, int64_t canary, double *ratio, char *err, size_t errlen)
{
    json_object *v;
    *ratio = 0;
    if (!json_object_object_get_ex(in, "max_failure_ratio", &v))
        return 0;
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
        snprintf(err, errlen, "max_failure_ratio: a number from 0 to 1");
        return -1;
    }
    *ratio = json_object_get_double(v);
    if (!(*ratio >= 0 && *ratio <= 1)) {
        snprintf(err, errlen, "max_failure_ratio: a number from 0 to 1, not %g", *ratio);
        return -1;
    }
    if (canary == 0) {
        snprintf(err, errlen, "max_failure_ratio needs a canary (canary_count above 0)");
        return -1;
    }
    return 0;
}

/* {"filter": {...}, "rate": N, "worker": ID, "unpin": true, "canary_count": N,
 * "max_failure_ratio": R}; false after answering 400. */
static bool create_body(api_t *x, http_req_t *r, json_object *in, task_spec_t *t)
{
    static const char *const known[] = {
        "filter", "rate", "worker", "unpin", "canary_count", "max_failure_ratio", NULL};
    char err[ERRBUF_SIZE] = "";
    jf_t f = {in, NULL, err, sizeof err};
    json_object *fin = NULL;
    t->rate = x->cfg->redrive.default_rate;
    bool ok = api_fields(in, known, err, sizeof err) == 0 &&
              jf_object(&f, "filter", true, &fin) >= 0 && /* all records: "filter": {} */
              jf_int(&f, "rate", false, 1, x->cfg->redrive.max_rate, &t->rate) >= 0 &&
              jf_int(&f, "canary_count", false, 0, DLQ_CANARY_MAX, &t->canary) >= 0 &&
              failure_ratio(in, t->canary, &t->ratio, err, sizeof err) == 0 &&
              api_pin(in, &t->worker, &t->unpin, err, sizeof err) == 0;
    if (ok && !(t->filter = dlq_filter(fin, true, err, sizeof err)))
        ok = false;
    if (!ok)
        http_error(r, 400, "bad_request", "%s", err);
    return ok;
}

static void create(api_t *x, http_req_t *r)
{
    char who[API_KEY_NAME_MAX + 1];
    if (!api_authorize(x, r, API_SCOPE_ADMIN, who, sizeof who))
        return;
    json_object *in = api_body_json(r);
    task_spec_t t = {0};
    if (!in || !create_body(x, r, in, &t)) {
        json_object_put(t.filter);
        json_object_put(in);
        return;
    }
    char rate_text[16], canary_text[16], ratio_text[32];
    snprintf(rate_text, sizeof rate_text, "%" PRId64, t.rate);
    snprintf(canary_text, sizeof canary_text, "%" PRId64, t.canary);
    snprintf(ratio_text, sizeof ratio_text, "%.17g", t.ratio);
    create_work_t w = {.params = {json_object_to_json_string_ext(t.filter, JSON_C_TO_STRING_PLAIN),
                                  dlq_task_source(t.filter), rate_text, t.worker,
                                  t.unpin ? "true" : "false", who, canary_text, ratio_text}};
    if (api_transaction(x, r, "starting a redrive task", create_fn, &w)) {
        if (PQntuples(w.res) == 0) {
            http_error(r, 409, "conflict", "redrive task %s is active on source '%s'",
                       w.active && PQntuples(w.active) ? PQgetvalue(w.active, 0, 0) : "?",
                       w.params[1]);
        } else {
            log_kv(LOG_INFO, "redrive task started", "filter", w.params[0], "rate", rate_text,
                   "canary_count", canary_text, "by", who, NULL);
            http_reply_json(r, 201, PQgetvalue(w.res, 0, 0));
        }
    }
    PQclear(w.res);
    PQclear(w.active);
    json_object_put(t.filter);
    json_object_put(in);
}

static void list(api_t *x, http_req_t *r)
{
    static const char *const allowed[] = {"status", "limit", NULL};
    char who[API_KEY_NAME_MAX + 1], limit[16];
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) || !http_query_only(r, allowed) ||
        !api_limit(r, limit, sizeof limit))
        return;
    const char *status = http_query(r, "status");
    if (status && !dlq_word_known(dlq_task_statuses, status)) {
        http_error(r, 400, "bad_request",
                   "status: running, completed, cancelling, cancelled, failed or paused_canary, "
                   "not '%.40s'",
                   status);
        return;
    }
    const char *p[] = {status, limit};
    PGresult *res = NULL;
    if (api_query(x, r, "listing redrive tasks", q_rt_list, 2, p, &res)) {
        size_t len = strlen(PQgetvalue(res, 0, 0)) + 16;
        char *body = malloc(len);
        if (body) {
            snprintf(body, len, "{\"tasks\":%s}", PQgetvalue(res, 0, 0));
            http_reply_json(r, 200, body);
        } else {
            http_error(r, 503, "unavailable", "out of memory");
        }
        free(body);
    }
    PQclear(res);
}

void api_redrive_tasks(http_req_t *r, void *arg)
{
    if (r->method == HTTP_GET)
        list(arg, r);
    else
        create(arg, r);
}

/* The task id of the path; false after answering 400. */
static bool task_id(http_req_t *r, char *text, size_t len)
{
    int64_t id;
    return api_path_id(r, 0, "a task", &id, text, len);
}

void api_redrive_task(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id[24];
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) || !task_id(r, id, sizeof id))
        return;
    const char *p[] = {id};
    PGresult *res = NULL;
    if (api_query(x, r, "reading a redrive task", q_rt_get, 1, p, &res)) {
        if (PQntuples(res) == 0)
            http_error(r, 404, "not_found", "no redrive task %s", id);
        else
            http_reply_json(r, 200, PQgetvalue(res, 0, 0));
    }
    PQclear(res);
}

/* cancel and resume: q_rt_cancel or q_rt_resume, which answer the status found and the task. */
static void change(http_req_t *r, api_t *x, bool resume)
{
    char who[API_KEY_NAME_MAX + 1], id[24];
    if (!api_authorize(x, r, API_SCOPE_ADMIN, who, sizeof who) || !task_id(r, id, sizeof id))
        return;
    const char *p[] = {id, who};
    PGresult *res = NULL;
    if (api_query(x, r, resume ? "resuming a redrive task" : "cancelling a redrive task",
                  resume ? q_rt_resume : q_rt_cancel, resume ? 2 : 1, p, &res)) {
        const char *before = PQntuples(res) ? PQgetvalue(res, 0, 0) : NULL;
        if (!before)
            http_error(r, 404, "not_found", "no redrive task %s", id);
        else if (resume && strcmp(before, "paused_canary"))
            http_error(r, 409, "conflict",
                       "redrive task %s is %s: only a paused_canary task is resumed", id, before);
        else if (!resume && strcmp(before, "running") && strcmp(before, "cancelling") &&
                 strcmp(before, "paused_canary"))
            http_error(r, 409, "conflict", "redrive task %s is %s: it has ended", id, before);
        else {
            log_kv(LOG_INFO, resume ? "redrive task resumed" : "redrive task cancel requested",
                   "task", id, "by", who, NULL);
            http_reply_json(r, 200, PQgetvalue(res, 0, 1));
        }
    }
    PQclear(res);
}

void api_redrive_task_cancel(http_req_t *r, void *arg)
{
    change(r, arg, false);
}

void api_redrive_task_resume(http_req_t *r, void *arg)
{
    change(r, arg, true);
}

/* ?result=moved|skipped&outcome=WORD|pending&limit=N&cursor=C: a page of items by record id. */
void api_redrive_task_items(http_req_t *r, void *arg)
{
    api_t *x = arg;
    static const char *const allowed[] = {"result", "outcome", "limit", "cursor", NULL};
    static const char *const results[] = {"moved", "skipped", NULL};
    static const char *const outcomes[] = {"pending",   "completed", "failed", "timeout",
                                           "abandoned", "cancelled", NULL};
    char who[API_KEY_NAME_MAX + 1], id[24], limit[16], after[24];
    const char *cursor = NULL;
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) || !task_id(r, id, sizeof id) ||
        !http_query_only(r, allowed) || !api_limit(r, limit, sizeof limit) ||
        !api_cursor(r, after, sizeof after, &cursor))
        return;
    const char *result = http_query(r, "result"), *outcome = http_query(r, "outcome");
    if (result && !dlq_word_known(results, result)) {
        http_error(r, 400, "bad_request", "result: moved or skipped, not '%.40s'", result);
        return;
    }
    if (outcome && !dlq_word_known(outcomes, outcome)) {
        http_error(r, 400, "bad_request",
                   "outcome: pending, completed, failed, timeout, abandoned or cancelled, not "
                   "'%.40s'",
                   outcome);
        return;
    }
    const char *p[] = {id, cursor ? cursor : "0", result, outcome, limit};
    PGresult *res = NULL;
    if (api_query(x, r, "listing a redrive task's items", q_rt_items, 5, p, &res)) {
        if (!strcmp(PQgetvalue(res, 0, 0), "0")) {
            http_error(r, 404, "not_found", "no redrive task %s", id);
        } else {
            char next[64];
            api_next_cursor(res, 2, 3, limit, next, sizeof next);
            api_reply_page(r, PQgetvalue(res, 0, 1), next);
        }
    }
    PQclear(res);
}
