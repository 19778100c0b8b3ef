/*
 * Bulk redrive tasks (docs/dead-letters.md, "Bulk redrive"): every REDRIVE_TICK_MS the
 * executor takes each active task in turn, in a transaction of its own that locks the task
 * (SKIP LOCKED: another executor has it this time), takes the tokens its bucket holds (schema
 * 024: rate per second, a burst of a fifth of a second), redrives that many of its records
 * oldest first through dlq_redrive() and commits them together with the task's counts and
 * progress. A killed executor loses at most the batch it had not committed; the next one
 * carries on from last_id. A cancelling task becomes cancelled at its next turn; a task whose
 * batches the database refuses (not an outage) REDRIVE_FAILURES times fails with the reason.
 * A task with a canary (schema 034, docs/dead-letters.md "Canary") redrives canary_count
 * records first, then waits, turn after turn, until their redriven runs ended; more than
 * max_failure_ratio of them failed and it pauses as paused_canary with the failures listed,
 * else it goes on. Every record gets an item (moved or skipped, and why); every
 * REDRIVE_OUTCOME_TICKS the job reads the outcomes of the moved ones whose runs ended.
 * The API that creates and shows them is api_redrive_tasks.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/pgtext.h"
#include "executor/redrive_tasks.h"
#include "warren/db.h"
#include "warren/dlq.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

#define REDRIVE_TICK_MS 100
#define REDRIVE_BATCH_MAX 500
#define REDRIVE_FAILURES 5
#define REDRIVE_OUTCOME_TICKS 50

/* clang-format off */
/* The task locked, and the tokens of its bucket now (a burst of 0.2 s, at least one). */
static const char lock_task_sql[] =
    "SELECT status, filter::text, rate, worker, unpin, max_id, last_id, created_by,"
    " least(floor(extract(epoch FROM now() - bucket_at) * rate), greatest(rate / 5, 1))::integer,"
    " canary_state, canary_count - moved, max_failure_ratio"
    " FROM redrive_tasks WHERE id = $1 FOR UPDATE SKIP LOCKED";

/* What a task did to the records of a batch ($2: [{record_id, word, detail}], one statement);
 * moved: the new attempt and redrive count. */
static const char items_sql[] =
    "INSERT INTO redrive_task_items (task_id, record_id, execution_id, canary, result,"
    " skip_reason, detail, attempt, redrive_count)"
    " SELECT $1::bigint, x.record_id, d.execution_id, $3::boolean,"
    " CASE WHEN x.word = 'moved' THEN 'moved' ELSE 'skipped' END, nullif(x.word, 'moved'),"
    " nullif(x.detail, ''), CASE WHEN x.word = 'moved' THEN d.redrive_attempt END,"
    " CASE WHEN x.word = 'moved' THEN e.redrive_count END"
    " FROM jsonb_to_recordset($2::jsonb) AS x(record_id bigint, word text, detail text)"
    " LEFT JOIN dead_letters d ON d.id = x.record_id"
    " LEFT JOIN executions e ON e.id = d.execution_id"
    " ON CONFLICT (task_id, record_id) DO NOTHING";

/* The outcomes of moved items whose redriven run ended (of task $1, or of every task). */
static const char outcomes_sql[] =
    "UPDATE redrive_task_items i SET outcome = e.status, error = left(e.error, 2000),"
    " ended_at = coalesce(e.ended_at, now())"
    " FROM executions e WHERE i.result = 'moved' AND i.outcome IS NULL AND e.id = i.execution_id"
    " AND ($1::bigint IS NULL OR i.task_id = $1::bigint) AND e.redrive_count = i.redrive_count"
    " AND e.status IN ('completed', 'failed', 'timeout', 'abandoned', 'cancelled')";

/* The canary's moved items: how many, how many ended, how many failed, the failures. */
static const char canary_sql[] =
    "SELECT count(*), count(outcome), count(*) FILTER (WHERE outcome <> 'completed'),"
    " coalesce(jsonb_agg(jsonb_build_object('record_id', record_id, 'execution_id',"
    "   execution_id, 'attempt', attempt, 'outcome', outcome, 'error', error)"
    "   ORDER BY record_id) FILTER (WHERE outcome <> 'completed'), '[]')::text"
    " FROM redrive_task_items WHERE task_id = $1 AND canary AND result = 'moved'";

/* The canary's verdict: $2 passed or failed (paused_canary), $3 the failures. */
static const char verdict_sql[] =
    "UPDATE redrive_tasks SET canary_state = $2, canary_failures = $3::jsonb,"
    " status = CASE WHEN $2 = 'failed' THEN 'paused_canary' ELSE status END WHERE id = $1";

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
    " status = CASE WHEN $6::boolean THEN 'completed' ELSE status END,"
    " canary_state = coalesce($7, canary_state)"
    " WHERE id = $1 RETURNING status, moved, to_move";
/* clang-format on */

typedef struct batch {
    const char *id;
    int max_redrives; /* dead_letter.max_redrives */
    bool canary;      /* the records redriven now are the canary */
    int moved, skipped;
    char outcome[16]; /* "", "completed", "cancelled", "paused_canary", "canary passed" */
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
    json_object *items = json_object_new_array();
    int rc = 0;
    for (int i = 0; i < PQntuples(ids) && rc == 0; i++) {
        dlq_redrive_result_t result;
        char *doc = NULL, why[300];
        const char *id = PQgetvalue(ids, i, 0);
        if ((rc = dlq_redrive(db, strtoll(id, NULL, 10), worker, unpin, b->max_redrives, by,
                              &result, &doc, why, sizeof why, err, errlen)) != 0)
            break;
        free(doc);
        json_object *it = json_object_new_object();
        json_object_object_add(it, "record_id", json_object_new_int64(strtoll(id, NULL, 10)));
        json_object_object_add(it, "word", json_object_new_string(dlq_redrive_word(result)));
        json_object_object_add(it, "detail", json_object_new_string(why));
        json_object_array_add(items, it);
        if (result == DLQ_REDRIVEN)
            b->moved++;
        else
            b->skipped++;
    }
    const char *p[] = {b->id, json_object_to_json_string_ext(items, JSON_C_TO_STRING_PLAIN),
                       b->canary ? "true" : "false"};
    if (rc == 0 && PQntuples(ids) > 0)
        rc = exec_params(db, items_sql, 3, p, NULL, err, errlen);
    json_object_put(items);
    return rc;
}

/* A waiting canary: once every run it started ended, failed over ratio pauses the task. */
static int canary_verdict(PGconn *db, batch_t *b, double ratio, char *err, size_t errlen)
{
    PGresult *res = NULL;
    const char *p[] = {b->id};
    int rc = exec_params(db, outcomes_sql, 1, p, NULL, err, errlen);
    if (rc == 0)
        rc = exec_params(db, canary_sql, 1, p, &res, err, errlen);
    if (rc != 0 || PQntuples(res) != 1) {
        PQclear(res);
        return rc;
    }
    int n = atoi(PQgetvalue(res, 0, 0)), ended = atoi(PQgetvalue(res, 0, 1));
    int failed = atoi(PQgetvalue(res, 0, 2));
    if (ended == n) {
        bool paused = n > 0 && (double)failed / n > ratio;
        const char *v[] = {b->id, paused ? "failed" : "passed", PQgetvalue(res, 0, 3)};
        rc = exec_params(db, verdict_sql, 3, v, NULL, err, errlen);
        if (rc == 0) {
            snprintf(b->outcome, sizeof b->outcome, "%s",
                     paused ? "paused_canary" : "canary passed");
            char counts[48];
            snprintf(counts, sizeof counts, "%d of %d", failed, n);
            log_kv(paused ? LOG_WARN : LOG_INFO, "redrive task canary ended", "task", b->id,
                   "failed", counts, "status", paused ? "paused_canary" : "running", NULL);
        }
    }
    PQclear(res);
    return rc;
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
    const char *canary = PQgetvalue(task, 0, 9);
    if (!strcmp(canary, "waiting")) {
        rc = canary_verdict(db, b, atof(PQgetvalue(task, 0, 11)), err, errlen);
        goto out;
    }
    b->canary = !strcmp(canary, "redriving");
    int tokens = atoi(PQgetvalue(task, 0, 8)), left = atoi(PQgetvalue(task, 0, 10));
    if (b->canary && tokens > left)
        tokens = left;
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
    /* the canary redriven (or the records ran out): wait for its runs, never complete yet */
    bool canary_done = b->canary && (done || b->moved >= left);
    if (b->canary)
        done = false;
    char moved[16], skipped[16], last[24], taken[16];
    snprintf(moved, sizeof moved, "%d", b->moved);
    snprintf(skipped, sizeof skipped, "%d", b->skipped);
    snprintf(last, sizeof last, "%s", n > 0 ? PQgetvalue(ids, n - 1, 0) : "0");
    snprintf(taken, sizeof taken, "%d", n);
    const char *u[] = {b->id,
                       moved,
                       skipped,
                       last,
                       taken,
                       done ? "true" : "false",
                       canary_done ? "waiting" : NULL};
    rc = exec_params(db, advance_sql, 7, u, &res, err, errlen);
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

static void run_task(redrive_tasks_t *t, const char *id)
{
    batch_t b = {.id = id, .max_redrives = t->cfg->dead_letter.max_redrives};
    if (dbc_transaction(t->db, "redriving dead letters", batch_fn, &b) != DBC_OK) {
        if (refused(b.sqlstate) && ++t->failures >= REDRIVE_FAILURES) {
            char reason[64];
            snprintf(reason, sizeof reason, "the database refused its batches (SQLSTATE %s)",
                     b.sqlstate);
            const char *p[] = {id, reason};
            if (dbc_transaction(t->db, "failing a redrive task", fail_fn, (void *)p) == DBC_OK)
                log_kv(LOG_ERROR, "redrive task failed", "task", id, "reason", reason, NULL);
            t->failures = 0;
        }
        return;
    }
    t->failures = 0;
    t->stats->dead_letters_redriven += (uint64_t)b.moved;
    if (b.outcome[0] && strcmp(b.outcome, "paused_canary") && strcmp(b.outcome, "canary passed"))
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

static int outcomes_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    (void)arg;
    const char *p[] = {NULL};
    return db_exec(db, outcomes_sql, 1, p, NULL, err, errlen);
}

void redrive_tasks_run(redrive_tasks_t *t)
{
    if (t->ticks++ % REDRIVE_OUTCOME_TICKS == 0)
        (void)dbc_statement(t->db, "reading redriven outcomes", outcomes_fn, NULL);
    active_t a = {0};
    if (dbc_statement(t->db, "reading redrive tasks", active_fn, &a) == DBC_OK)
        for (int i = 0; i < PQntuples(a.res); i++)
            run_task(t, PQgetvalue(a.res, i, 0));
    PQclear(a.res);
}

int64_t redrive_tasks_tick_ms(void)
{
    return REDRIVE_TICK_MS;
}
