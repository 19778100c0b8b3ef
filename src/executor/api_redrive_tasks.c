/* The HTTP API of bulk redrive tasks (docs/api.md): POST/GET /api/v1/redrive-tasks, GET .../{id},
 * POST .../{id}/cancel; redrive_tasks.c runs them. */
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
    const char *params[6];
    PGresult *res;
    PGresult *active;
} create_work_t;

static int create_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    create_work_t *w = arg;
    if (db_exec(db, q_rt_create, 6, w->params, &w->res, err, errlen) != 0)
        return -1;
    if (PQntuples(w->res) > 0)
        return 0;
    return db_exec(db, q_rt_active, 1, &w->params[1], &w->active, err, errlen);
}

/* {"filter": {...}, "rate": N, "worker": ID, "unpin": true}; false after answering 400. */
static bool create_body(api_t *x, http_req_t *r, json_object *in, json_object **filter,
                        int64_t *rate, const char **worker, bool *unpin)
{
    static const char *const known[] = {"filter", "rate", "worker", "unpin", NULL};
    char err[ERRBUF_SIZE] = "";
    jf_t f = {in, NULL, err, sizeof err};
    json_object *fin = NULL;
    *rate = x->cfg->redrive.default_rate;
    bool ok = api_fields(in, known, err, sizeof err) == 0 &&
              jf_object(&f, "filter", true, &fin) >= 0 && /* all records: "filter": {} */
              jf_int(&f, "rate", false, 1, x->cfg->redrive.max_rate, rate) >= 0 &&
              api_pin(in, worker, unpin, err, sizeof err) == 0;
    if (ok && !(*filter = dlq_filter(fin, true, err, sizeof err)))
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
    json_object *in = api_body_json(r), *filter = NULL;
    int64_t rate;
    const char *worker = NULL;
    bool unpin = false;
    if (!in || !create_body(x, r, in, &filter, &rate, &worker, &unpin)) {
        json_object_put(in);
        return;
    }
    char rate_text[16];
    snprintf(rate_text, sizeof rate_text, "%" PRId64, rate);
    create_work_t w = {.params = {json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN),
                                  dlq_task_source(filter), rate_text, worker,
                                  unpin ? "true" : "false", who}};
    if (api_transaction(x, r, "starting a redrive task", create_fn, &w)) {
        if (PQntuples(w.res) == 0) {
            http_error(r, 409, "conflict", "redrive task %s is active on source '%s'",
                       w.active && PQntuples(w.active) ? PQgetvalue(w.active, 0, 0) : "?",
                       w.params[1]);
        } else {
            log_kv(LOG_INFO, "redrive task started", "filter", w.params[0], "rate", rate_text, "by",
                   who, NULL);
            http_reply_json(r, 201, PQgetvalue(w.res, 0, 0));
        }
    }
    PQclear(w.res);
    PQclear(w.active);
    json_object_put(filter);
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
                   "status: running, completed, cancelling, cancelled or failed, not '%.40s'",
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

void api_redrive_task_cancel(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id[24];
    if (!api_authorize(x, r, API_SCOPE_ADMIN, who, sizeof who) || !task_id(r, id, sizeof id))
        return;
    const char *p[] = {id};
    PGresult *res = NULL;
    if (api_query(x, r, "cancelling a redrive task", q_rt_cancel, 1, p, &res)) {
        const char *before = PQntuples(res) ? PQgetvalue(res, 0, 0) : NULL;
        if (!before)
            http_error(r, 404, "not_found", "no redrive task %s", id);
        else if (strcmp(before, "running") && strcmp(before, "cancelling"))
            http_error(r, 409, "conflict", "redrive task %s is %s: it has ended", id, before);
        else {
            log_kv(LOG_INFO, "redrive task cancel requested", "task", id, "by", who, NULL);
            http_reply_json(r, 200, PQgetvalue(res, 0, 1));
        }
    }
    PQclear(res);
}
