/*
 * Bulk redrive tasks (docs/dead-letters.md, "Bulk redrive"): every REDRIVE_TICK_MS the
 * executor takes each active task in turn, in a transaction of its own that locks the task
 * (SKIP LOCKED: another executor has it this time), takes the tokens its bucket holds (schema
 * 024: rate per second, a burst of a fifth of a second), redrives that many of its records
 * oldest first through dlq_redrive() and commits them together with the task's counts and
 * progress. A killed executor loses at most the batch it had not committed; the next one
 * carries on from last_id. A cancelling task becomes cancelled at its next turn; a task whose
 * batches the database refuses (not an outage) REDRIVE_FAILURES times fails with the reason.
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

static void run_task(redrive_tasks_t *t, const char *id)
{
    batch_t b = {.id = id};
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

void redrive_tasks_run(redrive_tasks_t *t)
{
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
