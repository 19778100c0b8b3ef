/*
 * The timeout monitor: executions nobody will finish. Scheduled longer than
 * executor.scheduled_timeout_s -> failed (no worker started it); running on a worker whose
 * heartbeat is stale, or that went offline -> abandoned (canceling -> cancelled: the cancel
 * stands, and nothing runs it any more). Each also leaves a
 * dead_letters row (the execution row as body and snapshot). One statement per kind: claim
 * with SKIP LOCKED, CAS fenced by status and attempt, insert the dead letters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/executor.h"
#include "executor/transitions.h"
#include "warren/db.h"
#include "warren/log.h"

#define SCHEDULED_TIMEOUT_ERROR "Scheduled timeout: no worker started it"

/* clang-format off */
/* The dead letter of each changed row; its dedup key names execution, attempt and reason. */
#define INSERT_DEAD_LETTERS(reason, error_expr)                                                 \
    ", ins AS (INSERT INTO dead_letters (dedup_key, execution_id, reason, queue, headers, body,"  \
    " body_text, error, snapshot)"                                                            \
    " SELECT 'execution:' || c.id || ':' || c.attempt || '/' || " reason ", c.id, " reason ","  \
    " 'worker.' || c.worker || '.executions', '{}', convert_to(c.snap::text, 'UTF8'),"        \
    " c.snap::text, " error_expr ", c.snap FROM changed c"                                    \
    " ON CONFLICT (dedup_key) DO NOTHING RETURNING execution_id) "                            \
    "SELECT c.id, coalesce(c.worker, ''), EXISTS (SELECT 1 FROM ins WHERE ins.execution_id = c.id)::int" \
    " FROM changed c"

static const char scheduled_sql[] =
    "WITH stale AS (SELECT e.id, e.attempt, e.worker, row_to_json(e)::jsonb AS snap"
    " FROM executions e WHERE e.status = " EXEC_SQL(SCHEDULED)
    " AND e.scheduled_at < now() - make_interval(secs => $1::int)"
    " ORDER BY e.scheduled_at LIMIT $2 FOR UPDATE SKIP LOCKED), "
    "changed AS (UPDATE executions e SET status = " EXEC_SQL(FAILED) ","
    " error = '" SCHEDULED_TIMEOUT_ERROR "',"
    " result = jsonb_build_object('error', '" SCHEDULED_TIMEOUT_ERROR "', 'worker', s.worker,"
    " 'attempt', s.attempt, 'scheduled_at', s.snap->'scheduled_at', 'scheduled_timeout_s', $1::int)"
    " FROM stale s WHERE e.id = s.id AND e.status = " EXEC_SQL(SCHEDULED)
    " AND e.attempt = s.attempt"
    " RETURNING e.id, s.attempt, s.worker, s.snap)"
    INSERT_DEAD_LETTERS("'scheduled_timeout'", "'" SCHEDULED_TIMEOUT_ERROR "'");

/* Why the worker is considered gone, for error and result. */
#define STALE_WHY                                                                               \
    "CASE WHEN s.worker_status IS NULL THEN 'Worker ' || coalesce(s.worker, '?') || ' is unknown'" \
    " WHEN s.worker_status = 'offline' THEN 'Worker ' || s.worker || ' went offline while it ran'"  \
    " ELSE 'Worker heartbeat stale: ' || s.worker || ' last seen ' || s.last_heartbeat END"

/* A cancel whose worker is gone: nobody can stop the process any more, and nothing runs it. */
#define CANCEL_GONE                                                                             \
    "'Cancelled; worker ' || coalesce(s.worker, '?') || ' was gone, its process could not be told'"

static const char stale_worker_sql[] =
    "WITH stale AS (SELECT e.id, e.attempt, e.worker, e.status, w.status AS worker_status,"
    " w.last_heartbeat, row_to_json(e)::jsonb AS snap"
    " FROM executions e LEFT JOIN workers w ON w.id = e.worker"
    " WHERE e.status = ANY($2::text[]) AND (w.id IS NULL OR w.status = 'offline'"
    " OR w.last_heartbeat < now() - make_interval(secs => $1::int * w.heartbeat_interval_s))"
    " ORDER BY e.id LIMIT $3 FOR UPDATE OF e SKIP LOCKED), "
    "changed AS (UPDATE executions e SET status = CASE WHEN s.status = " EXEC_SQL(CANCELING)
    "   THEN " EXEC_SQL(CANCELLED) " ELSE " EXEC_SQL(ABANDONED) " END,"
    " error = CASE WHEN s.status = " EXEC_SQL(CANCELING) " THEN " CANCEL_GONE " ELSE " STALE_WHY
    " END,"
    " result = jsonb_build_object('error', " STALE_WHY ", 'worker', s.worker, 'attempt', s.attempt,"
    " 'last_heartbeat', s.last_heartbeat, 'worker_status', s.worker_status)"
    " FROM stale s WHERE e.id = s.id AND e.status = s.status AND e.attempt = s.attempt"
    " RETURNING e.id, s.attempt, s.worker, s.snap, e.error)"
    INSERT_DEAD_LETTERS("'worker_stale'", "c.error");
/* clang-format on */

typedef struct monitor_pass {
    executor_t *x;
    const char *sql;
    const char *reason;
    int nparams;
    const char *params[3];
    PGresult *changed;
} monitor_pass_t;

static int monitor_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    monitor_pass_t *m = arg;
    PQclear(m->changed);
    m->changed = NULL;
    return db_exec(db, m->sql, m->nparams, m->params, &m->changed, err, errlen);
}

/* Run one kind; returns how many executions it changed, -1 on a database problem. */
static int run_pass(executor_t *x, monitor_pass_t *m, uint64_t *counter, const char *what)
{
    if (dbc_transaction(&x->db, what, monitor_work, m) != DBC_OK) {
        PQclear(m->changed);
        return -1;
    }
    int n = PQntuples(m->changed);
    for (int r = 0; r < n; r++) {
        (*counter)++;
        if (atoi(PQgetvalue(m->changed, r, 2)) == 1)
            stats_dead_letter(&x->stats, m->reason, 1);
        log_kv(LOG_WARN, what, "execution_id", PQgetvalue(m->changed, r, 0), "worker",
               PQgetvalue(m->changed, r, 1), "reason", m->reason, NULL);
    }
    PQclear(m->changed);
    return n;
}

void monitor_run(executor_t *x)
{
    int batch = x->cfg->executor.batch_size;
    char timeout[16], factor[16], limit[16], sources[128];
    snprintf(timeout, sizeof timeout, "%d", x->cfg->executor.scheduled_timeout_s);
    snprintf(factor, sizeof factor, "%d", x->cfg->executor.heartbeat_stale_factor);
    snprintf(limit, sizeof limit, "%d", batch);
    if (trans_sources_literal(EXEC_ABANDONED, sources, sizeof sources) != 0)
        return;
    monitor_pass_t scheduled = {.x = x,
                                .sql = scheduled_sql,
                                .reason = "scheduled_timeout",
                                .nparams = 2,
                                .params = {timeout, limit}};
    monitor_pass_t stale = {.x = x,
                            .sql = stale_worker_sql,
                            .reason = "worker_stale",
                            .nparams = 3,
                            .params = {factor, sources, limit}};
    /* Full batches mean more are waiting; a bounded number of rounds keeps the loop responsive. */
    for (int round = 0; round < 10; round++) {
        int a = run_pass(x, &scheduled, &x->stats.monitor_failed,
                         "execution failed: scheduled too long");
        int b = run_pass(x, &stale, &x->stats.monitor_abandoned,
                         "execution abandoned: its worker is gone");
        if (a < 0 || b < 0 || (a < batch && b < batch))
            break;
    }
    cancel_resend(x);
}
