/*
 * Bulk redrive tasks (docs/dead-letters.md, "Bulk redrive"): every REDRIVE_TICK_MS the
 * executor takes each active task in turn, in a transaction of its own that locks the task
 * (SKIP LOCKED: another executor has it this time), takes the tokens its bucket holds (schema
 * 024: rate per second, a burst of a fifth of a second), redrives that many of its records
 * oldest first through dlq_redrive() and commits them together with the task's counts and
 * progress. A killed executor loses at most the batch it had not committed; the next one
 * carries on from last_id. A cancelling task becomes cancelled at its next turn; a task whose
 * batches the database refuses (not an outage) REDRIVE_FAILURES times fails with the reason.
 * And the API: POST/GET /api/v1/redrive-tasks, GET .../{id}, POST .../{id}/cancel.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "executor/pgtext.h"
#include "warren/db.h"
#include "warren/dlq.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

#define REDRIVE_TICK_MS 100
#define REDRIVE_BATCH_MAX 500
#define REDRIVE_FAILURES 5

/* clang-format off */
/* The task locked, and the tokens of its bucket now (a burst of 0.2 s, at least one). */
static const char lock_task_sql[] =
    "SELECT status, filter::text, rate, worker, unpin, max_id, last_id, created_by,"
    " least(floor(extract(epoch FROM now() - bucket_at) * rate), greatest(rate / 5, 1))::integer"
    " FROM redrive_tasks WHERE id = $1 FOR UPDATE SKIP LOCKED";

static const char next_records_sql[] =
    "SELECT d.id FROM dead_letters d WHERE warren_dl_match(d, $1::jsonb)"
    " AND warren_dl_redrivable(d) AND d.id > $2::bigint AND d.id <= $3::bigint"
    " ORDER BY d.id LIMIT $4::integer";

/* Counts and progress; the bucket gives up the tokens taken. */
static const char advance_sql[] =
    "UPDATE redrive_tasks SET moved = moved + $2::integer, skipped = skipped + $3::integer,"
    " last_id = greatest(last_id, $4::bigint),"
    " bucket_at = greatest(bucket_at, now() - make_interval(secs => greatest(rate / 5, 1)::float8"
    "   / rate)) + make_interval(secs => $5::float8 / rate),"
    " status = CASE WHEN $6::boolean THEN 'completed' ELSE status END"
    " WHERE id = $1 RETURNING status, moved, to_move";
/* clang-format on */

typedef struct batch {
    executor_t *x;
    const char *id;
    int moved, skipped;
    char outcome[16]; /* "", "completed", "cancelled" */
    char sqlstate[6];
} batch_t;

static int exec_params(PGconn *db, const char *sql, int n, const char *const *p, PGresult **res,
                       char *err, size_t errlen)
{
    return db_exec(db, sql, n, p, res, err, errlen);
}

/* Redrive the records of ids; counts into b. */
static int redrive_records(PGconn *db, batch_t *b, PGresult *ids, PGresult *task, char *err,
                           size_t errlen)
{
    const char *worker = PQgetisnull(task, 0, 3) ? NULL : PQgetvalue(task, 0, 3);
    bool unpin = PQgetvalue(task, 0, 4)[0] == 't';
    char by[300];
    snprintf(by, sizeof by, "%s (redrive task %s)",
             PQgetisnull(task, 0, 7) ? "warren" : PQgetvalue(task, 0, 7), b->id);
    for (int i = 0; i < PQntuples(ids); i++) {
        dlq_redrive_result_t result;
        char *doc = NULL, why[300];
        if (dlq_redrive(db, strtoll(PQgetvalue(ids, i, 0), NULL, 10), worker, unpin, by, &result,
                        &doc, why, sizeof why, err, errlen) != 0)
            return -1;
        free(doc);
        if (result == DLQ_REDRIVEN)
            b->moved++;
        else
            b->skipped++;
    }
    return 0;
}

static int batch_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    batch_t *b = arg;
    b->moved = b->skipped = 0;
    b->outcome[0] = 0;
    PGresult *task = NULL, *ids = NULL, *res = NULL;
    const char *p[] = {b->id};
    int rc = exec_params(db, lock_task_sql, 1, p, &task, err, errlen);
    if (rc != 0 || PQntuples(task) == 0) /* another executor has it */
        goto out;
    if (!strcmp(PQgetvalue(task, 0, 0), "cancelling")) {
        rc = exec_params(db, "UPDATE redrive_tasks SET status = 'cancelled' WHERE id = $1", 1, p,
                         NULL, err, errlen);
        snprintf(b->outcome, sizeof b->outcome, "cancelled");
        goto out;
    }
    int tokens = atoi(PQgetvalue(task, 0, 8));
    if (tokens <= 0)
        goto out;
    char limit[16];
    snprintf(limit, sizeof limit, "%d", tokens < REDRIVE_BATCH_MAX ? tokens : REDRIVE_BATCH_MAX);
    const char *q[] = {PQgetvalue(task, 0, 1), PQgetvalue(task, 0, 6), PQgetvalue(task, 0, 5),
                       limit};
    if ((rc = exec_params(db, next_records_sql, 4, q, &ids, err, errlen)) != 0 ||
        (rc = redrive_records(db, b, ids, task, err, errlen)) != 0)
        goto out;
    int n = PQntuples(ids);
    bool done = n < atoi(limit);
    char moved[16], skipped[16], last[24], taken[16];
    snprintf(moved, sizeof moved, "%d", b->moved);
    snprintf(skipped, sizeof skipped, "%d", b->skipped);
    snprintf(last, sizeof last, "%s", n > 0 ? PQgetvalue(ids, n - 1, 0) : "0");
    snprintf(taken, sizeof taken, "%d", n);
    const char *u[] = {b->id, moved, skipped, last, taken, done ? "true" : "false"};
    rc = exec_params(db, advance_sql, 6, u, &res, err, errlen);
    if (rc == 0 && done)
        snprintf(b->outcome, sizeof b->outcome, "completed");
out:
    if (rc != 0)
        snprintf(b->sqlstate, sizeof b->sqlstate, "%s", db_last_sqlstate(db));
    PQclear(task);
    PQclear(ids);
    PQclear(res);
    return rc;
}

static int fail_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    const char *const *p = arg;
    return db_exec(db,
                   "UPDATE redrive_tasks SET status = 'failed', failure_reason = $2"
                   " WHERE id = $1 AND status IN ('running', 'cancelling')",
                   2, p, NULL, err, errlen);
}

/* A refusal that is not an outage: the input or the schema is wrong, and trying again will
 * not help. */
static bool refused(const char *sqlstate)
{
    return sqlstate[0] && !db_sqlstate_transient(sqlstate) && strncmp(sqlstate, "08", 2) != 0;
}

static void run_task(executor_t *x, const char *id)
{
    batch_t b = {.x = x, .id = id};
    if (dbc_transaction(&x->db_jobs, "redriving dead letters", batch_fn, &b) != DBC_OK) {
        if (refused(b.sqlstate) && ++x->redrive_failures >= REDRIVE_FAILURES) {
            char reason[64];
            snprintf(reason, sizeof reason, "the database refused its batches (SQLSTATE %s)",
                     b.sqlstate);
            const char *p[] = {id, reason};
            if (dbc_transaction(&x->db_jobs, "failing a redrive task", fail_fn, (void *)p) ==
                DBC_OK)
                log_kv(LOG_ERROR, "redrive task failed", "task", id, "reason", reason, NULL);
            x->redrive_failures = 0;
        }
        return;
    }
    x->redrive_failures = 0;
    x->stats.dead_letters_redriven += (uint64_t)b.moved;
    if (b.outcome[0])
        log_kv(LOG_INFO, "redrive task finished", "task", id, "status", b.outcome, NULL);
}

typedef struct active {
    PGresult *res;
} active_t;

static int active_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    active_t *a = arg;
    return db_exec(db,
                   "SELECT id FROM redrive_tasks WHERE status IN ('running', 'cancelling')"
                   " ORDER BY id",
                   0, NULL, &a->res, err, errlen);
}

void redrive_tasks_run(executor_t *x)
{
    active_t a = {0};
    if (dbc_statement(&x->db_jobs, "reading redrive tasks", active_fn, &a) == DBC_OK)
        for (int i = 0; i < PQntuples(a.res); i++)
            run_task(x, PQgetvalue(a.res, i, 0));
    PQclear(a.res);
}

int64_t redrive_tasks_tick_ms(void)
{
    return REDRIVE_TICK_MS;
}

/* ---- the API ---- */

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
static bool create_body(executor_t *x, http_req_t *r, json_object *in, json_object **filter,
                        int64_t *rate, const char **worker, bool *unpin)
{
    static const char *const known[] = {"filter", "rate", "worker", "unpin", NULL};
    char err[ERRBUF_SIZE] = "";
    jf_t f = {in, NULL, err, sizeof err};
    json_object *fin = NULL;
    *rate = x->cfg->redrive.default_rate;
    bool ok = api_fields(in, known, err, sizeof err) == 0 &&
              jf_object(&f, "filter", false, &fin) >= 0 &&
              jf_int(&f, "rate", false, 1, x->cfg->redrive.max_rate, rate) >= 0 &&
              api_pin(in, worker, unpin, err, sizeof err) == 0;
    if (ok && !(*filter = dlq_filter(fin, true, err, sizeof err)))
        ok = false;
    if (!ok)
        http_error(r, 400, "bad_request", "%s", err);
    return ok;
}

static void create(executor_t *x, http_req_t *r)
{
    char who[API_KEY_NAME_MAX + 1];
    if (!api_authorize(x, r, true, who, sizeof who))
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

static void list(executor_t *x, http_req_t *r)
{
    static const char *const allowed[] = {"status", "limit", NULL};
    char who[API_KEY_NAME_MAX + 1], limit[16];
    if (!api_authorize(x, r, false, who, sizeof who) || !http_query_only(r, allowed) ||
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
    executor_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id[24];
    if (!api_authorize(x, r, false, who, sizeof who) || !task_id(r, id, sizeof id))
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
    executor_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id[24];
    if (!api_authorize(x, r, true, who, sizeof who) || !task_id(r, id, sizeof id))
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
