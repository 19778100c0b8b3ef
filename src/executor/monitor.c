/*
 * The timeout monitor: executions nobody will finish. Scheduled with a dispatch the broker
 * never confirmed for executor.unconfirmed_timeout_ms -> requested (dispatched again);
 * scheduled with a confirmed dispatch longer than executor.scheduled_timeout_s -> failed (no
 * worker started it); running on a worker whose heartbeat is stale, or that went offline, or
 * restarted (a newer incarnation heartbeats), or that ran past its timeout plus
 * executor.running_grace_s without a result -> abandoned; canceling in the same cases ->
 * cancelled (the cancel stands, and nothing runs it any more). All but the first also leave a
 * dead_letters row (the execution row as body and snapshot). One statement per kind: claim
 * with SKIP LOCKED, CAS fenced by status and attempt, insert the dead letters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/attempts.h"
#include "executor/monitor.h"
#include "executor/scheduler.h"
#include "executor/transitions.h"
#include "warren/db.h"
#include "warren/exec_status.h"
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
    "SELECT c.id, coalesce(c.worker, ''), EXISTS (SELECT 1 FROM ins WHERE ins.execution_id = c.id)::int," \
    " c.attempt, c.status, c.error FROM changed c"

/* What the monitor makes of a running row (abandoned, error why) and of a canceling one
 * (cancelled, error cancel_why): the cancel stands, and nothing will report any more. */
#define SETTLE(cancel_why, why)                                                                 \
    " status = CASE WHEN s.status = " EXEC_SQL(CANCELING) " THEN " EXEC_SQL(CANCELLED)          \
    " ELSE " EXEC_SQL(ABANDONED) " END,"                                                        \
    " error = CASE WHEN s.status = " EXEC_SQL(CANCELING) " THEN " cancel_why " ELSE " why " END,"
/* A cancel whose worker is gone (stale, offline, unknown, restarted): its process cannot be
 * told. */
#define CANCEL_GONE                                                                             \
    "'Cancelled; worker ' || coalesce(s.worker, '?') || ' was gone, its process could not be told'"

/* Only a dispatch the broker confirmed was in a queue: only its row fails for not starting. */
static const char scheduled_sql[] =
    "WITH stale AS (SELECT e.id, e.attempt, e.worker, row_to_json(e)::jsonb AS snap"
    " FROM executions e WHERE e.status = " EXEC_SQL(SCHEDULED)
    " AND e.dispatch_confirmed_at IS NOT NULL"
    " AND e.scheduled_at < now() - make_interval(secs => $1::int)"
    " ORDER BY e.scheduled_at LIMIT $2 FOR UPDATE SKIP LOCKED), "
    "changed AS (UPDATE executions e SET status = " EXEC_SQL(FAILED) ","
    " error = '" SCHEDULED_TIMEOUT_ERROR "',"
    " result = jsonb_build_object('error', '" SCHEDULED_TIMEOUT_ERROR "', 'worker', s.worker,"
    " 'attempt', s.attempt, 'scheduled_at', s.snap->'scheduled_at', 'scheduled_timeout_s', $1::int)"
    " FROM stale s WHERE e.id = s.id AND e.status = " EXEC_SQL(SCHEDULED)
    " AND e.attempt = s.attempt"
    " RETURNING e.id, s.attempt, s.worker, s.snap, e.status, e.error)"
    INSERT_DEAD_LETTERS("'scheduled_timeout'", "'" SCHEDULED_TIMEOUT_ERROR "'");

/* A dispatch never confirmed may be in no queue (the executor died after COMMIT, the COMMIT's
 * reply was lost, the publish had no answer): back to requested, once per attempt (the next
 * dispatch is the next attempt), and it goes out again. The history keeps the step. */
static const char unconfirmed_sql[] =
    "WITH stale AS (SELECT e.id, e.attempt FROM executions e"
    " WHERE e.status = " EXEC_SQL(SCHEDULED) " AND e.dispatch_confirmed_at IS NULL"
    " AND e.scheduled_at < now() - make_interval(secs => $1::float8 / 1000)"
    " ORDER BY e.scheduled_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
    "UPDATE executions e SET status = " EXEC_SQL(REQUESTED) ","
    " wait_reason = '" SCHED_UNCONFIRMED_REASON "'"
    " FROM stale s WHERE e.id = s.id AND e.status = " EXEC_SQL(SCHEDULED)
    " AND e.attempt = s.attempt"
    " RETURNING e.id, coalesce(e.worker, ''), 0";

/* A worker restarted under the same name: its rows reported running by an older process (an
 * incarnation other than the newest one's, in a report sent before the newest one started;
 * schema 009) are abandoned, attempt-fenced. $2: the workers to look at (NULL: all). */
#define RESTART_WHY                                                                             \
    "'Worker ' || s.worker || ' restarted (incarnation ' || coalesce(s.old_inc, 'unknown') ||"  \
    " ' replaced by ' || s.new_inc || ')'"
static const char restarted_sql[] =
    "WITH ws AS (SELECT w.id, w.incarnation, w.started_at FROM workers w"
    " WHERE w.incarnation IS NOT NULL AND ($2::text[] IS NULL OR w.id = ANY($2::text[]))), "
    "stale AS (SELECT e.id, e.attempt, e.worker, e.status, e.incarnation AS old_inc,"
    " ws.incarnation AS new_inc, row_to_json(e)::jsonb AS snap"
    " FROM executions e JOIN ws ON ws.id = e.worker"
    " WHERE e.status = ANY($1::text[]) AND e.incarnation IS DISTINCT FROM ws.incarnation"
    " AND coalesce(e.reported_at, e.started_at) < ws.started_at"
    " ORDER BY e.id LIMIT $3 FOR UPDATE OF e SKIP LOCKED), "
    "changed AS (UPDATE executions e SET" SETTLE(CANCEL_GONE, RESTART_WHY)
    " result = jsonb_build_object('error', " RESTART_WHY ", 'worker', s.worker,"
    " 'attempt', s.attempt, 'incarnation', s.old_inc, 'new_incarnation', s.new_inc)"
    " FROM stale s WHERE e.id = s.id AND e.status = s.status AND e.attempt = s.attempt"
    " RETURNING e.id, s.attempt, s.worker, s.snap, e.status, e.error)"
    INSERT_DEAD_LETTERS("'worker_restarted'", "c.error");

/* Running (or canceling) longer than its timeout plus the grace with no result: the worker
 * would have ended it by now and reported, so whatever happened, nobody will. The timeout is
 * the one the worker reported applying, else the submission's, else $1. */
#define LATE_TIMEOUT "coalesce(e.effective_timeout_s, e.timeout_s, $1::int)"
#define LATE_WHY                                                                                \
    "'No result within the timeout: running since ' || s.started_at || ', timeout ' ||"        \
    " s.timeout_s || ' s + grace ' || $2::int || ' s'"
static const char running_timeout_sql[] =
    "WITH stale AS (SELECT e.id, e.attempt, e.worker, e.status, e.started_at,"
    " " LATE_TIMEOUT " AS timeout_s, row_to_json(e)::jsonb AS snap"
    " FROM executions e WHERE e.status = ANY($3::text[]) AND e.started_at IS NOT NULL"
    " AND e.started_at < now() - make_interval(secs => " LATE_TIMEOUT " + $2::int)"
    " ORDER BY e.id LIMIT $4 FOR UPDATE SKIP LOCKED), "
    "changed AS (UPDATE executions e SET" SETTLE("'Cancelled; ' || " LATE_WHY, LATE_WHY)
    " result = jsonb_build_object('error', " LATE_WHY ", 'worker', s.worker,"
    " 'attempt', s.attempt, 'timeout_s', s.timeout_s, 'grace_s', $2::int)"
    " FROM stale s WHERE e.id = s.id AND e.status = s.status AND e.attempt = s.attempt"
    " RETURNING e.id, s.attempt, s.worker, s.snap, e.status, e.error)"
    INSERT_DEAD_LETTERS("'running_timeout'", "c.error");

/* Why the worker is considered gone, for error and result. */
#define STALE_WHY                                                                               \
    "CASE WHEN s.worker_status IS NULL THEN 'Worker ' || coalesce(s.worker, '?') || ' is unknown'" \
    " WHEN s.worker_status = 'offline' THEN 'Worker ' || s.worker || ' went offline while it ran'"  \
    " ELSE 'Worker heartbeat stale: ' || s.worker || ' last seen ' || s.last_heartbeat END"

/* The workers are judged once each (schema 007's warren_worker_fresh), then joined. */
static const char stale_worker_sql[] =
    "WITH ws AS MATERIALIZED (SELECT w.id, w.status, w.last_heartbeat,"
    " warren_worker_fresh(w, $1::int) AS fresh FROM workers w), "
    "stale AS (SELECT e.id, e.attempt, e.worker, e.status, w.status AS worker_status,"
    " w.last_heartbeat, row_to_json(e)::jsonb AS snap"
    " FROM executions e LEFT JOIN ws w ON w.id = e.worker"
    " WHERE e.status = ANY($2::text[]) AND (w.id IS NULL OR w.status = 'offline' OR NOT w.fresh)"
    " ORDER BY e.id LIMIT $3 FOR UPDATE OF e SKIP LOCKED), "
    "changed AS (UPDATE executions e SET" SETTLE(CANCEL_GONE, STALE_WHY)
    " result = jsonb_build_object('error', " STALE_WHY ", 'worker', s.worker, 'attempt', s.attempt,"
    " 'last_heartbeat', s.last_heartbeat, 'worker_status', s.worker_status)"
    " FROM stale s WHERE e.id = s.id AND e.status = s.status AND e.attempt = s.attempt"
    " RETURNING e.id, s.attempt, s.worker, s.snap, e.status, e.error)"
    INSERT_DEAD_LETTERS("'worker_stale'", "c.error");
/* clang-format on */

int monitor_restarted(PGconn *db, const char *workers, int limit, PGresult **changed, char *err,
                      size_t errlen)
{
    char sources[128], lim[16];
    if (trans_sources_literal(EXEC_ABANDONED, sources, sizeof sources) != 0) {
        snprintf(err, errlen, "status list too long");
        return -1;
    }
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[] = {sources, workers, lim};
    return db_exec(db, restarted_sql, 3, params, changed, err, errlen);
}

int monitor_end_attempts(PGconn *db, PGresult *changed, attempt_outcome_t outcome, bool suspect,
                         executor_stats_t *counts, char *err, size_t errlen)
{
    int n = PQntuples(changed);
    if (n == 0 || PQnfields(changed) < 6)
        return 0;
    attempt_end_t *ends = calloc((size_t)n, sizeof *ends);
    if (!ends) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < n; r++) {
        const char *status = PQgetvalue(changed, r, 4);
        bool cancelled = !strcmp(status, EXEC_NAME_CANCELLED);
        ends[r] = (attempt_end_t){.id = strtoll(PQgetvalue(changed, r, 0), NULL, 10),
                                  .attempt = atoi(PQgetvalue(changed, r, 3)),
                                  .status = status,
                                  .outcome = cancelled ? OUTCOME_CANCELLED : outcome,
                                  .error = PQgetisnull(changed, r, 5) ? NULL
                                                                      : PQgetvalue(changed, r, 5),
                                  .lost_worker = suspect ? PQgetvalue(changed, r, 1) : NULL};
    }
    int rc = attempts_end(db, ends, (size_t)n, counts, err, errlen);
    free(ends);
    return rc;
}

typedef struct monitor_pass {
    const char *sql;
    const char *reason;
    int nparams;
    const char *params[4];
    PGresult *changed;
    bool ends_attempts;        /* the rows it changes ended their attempt */
    attempt_outcome_t outcome; /* how, for the retry policy */
    bool suspect;              /* the worker lost a confirmed dispatch: suspect */
    executor_stats_t counts;   /* retries and their dead letters, merged after COMMIT */
} monitor_pass_t;

static int monitor_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    monitor_pass_t *m = arg;
    PQclear(m->changed);
    m->changed = NULL;
    memset(&m->counts, 0, sizeof m->counts);
    stats_init(&m->counts);
    if (db_exec(db, m->sql, m->nparams, m->params, &m->changed, err, errlen) != 0)
        return -1;
    return m->ends_attempts ? monitor_end_attempts(db, m->changed, m->outcome, m->suspect,
                                                   &m->counts, err, errlen)
                            : 0;
}

/* Run one kind; returns how many executions it changed, -1 on a database problem. */
static int run_pass(monitor_t *mon, monitor_pass_t *m, uint64_t *counter, const char *what)
{
    if (dbc_transaction(mon->db, what, monitor_work, m) != DBC_OK) {
        PQclear(m->changed);
        return -1;
    }
    int n = PQntuples(m->changed);
    stats_merge(mon->stats, &m->counts);
    for (int r = 0; r < n; r++) {
        (*counter)++;
        if (atoi(PQgetvalue(m->changed, r, 2)) == 1)
            stats_dead_letter(mon->stats, m->reason, 1);
        log_kv(LOG_WARN, what, "execution_id", PQgetvalue(m->changed, r, 0), "worker",
               PQgetvalue(m->changed, r, 1), "reason", m->reason, NULL);
    }
    PQclear(m->changed);
    return n;
}

void monitor_run(monitor_t *mon)
{
    const typeof(mon->cfg->executor) *c = &mon->cfg->executor;
    int batch = c->batch_size;
    char timeout[16], factor[16], limit[16], sources[128], unconfirmed[16], dflt[16], grace[16];
    snprintf(timeout, sizeof timeout, "%d", c->scheduled_timeout_s);
    snprintf(unconfirmed, sizeof unconfirmed, "%d", c->unconfirmed_timeout_ms);
    snprintf(factor, sizeof factor, "%d", c->heartbeat_stale_factor);
    snprintf(limit, sizeof limit, "%d", batch);
    snprintf(dflt, sizeof dflt, "%d", c->running_timeout_default_s);
    snprintf(grace, sizeof grace, "%d", c->running_grace_s);
    if (trans_sources_literal(EXEC_ABANDONED, sources, sizeof sources) != 0)
        return;
    monitor_pass_t redispatch = {.sql = unconfirmed_sql,
                                 .reason = "unconfirmed",
                                 .nparams = 2,
                                 .params = {unconfirmed, limit}};
    monitor_pass_t scheduled = {.sql = scheduled_sql,
                                .reason = "scheduled_timeout",
                                .ends_attempts = true,
                                .outcome = OUTCOME_WORKER_LOST,
                                .suspect = true,
                                .nparams = 2,
                                .params = {timeout, limit}};
    monitor_pass_t restarted = {.sql = restarted_sql,
                                .reason = "worker_restarted",
                                .ends_attempts = true,
                                .outcome = OUTCOME_WORKER_LOST,
                                .nparams = 3,
                                .params = {sources, NULL, limit}};
    monitor_pass_t late = {.sql = running_timeout_sql,
                           .reason = "running_timeout",
                           .ends_attempts = true,
                           .outcome = OUTCOME_TIMEOUT,
                           .nparams = 4,
                           .params = {dflt, grace, sources, limit}};
    monitor_pass_t stale = {.sql = stale_worker_sql,
                            .reason = "worker_stale",
                            .ends_attempts = true,
                            .outcome = OUTCOME_WORKER_LOST,
                            .nparams = 3,
                            .params = {factor, sources, limit}};
    /* Heartbeats (and results) this executor could not hear say nothing about the workers: no
     * verdict from them until it hears again and has recorded since when. */
    bool hearing = hearing_check(mon->hearing);
    bool results = consumer_hearing(mon->results);
    /* Full batches mean more are waiting; a bounded number of rounds keeps the loop responsive. */
    for (int round = 0; round < 10; round++) {
        int n[5] = {
            run_pass(mon, &redispatch, &mon->stats->monitor_redispatched,
                     "dispatch never confirmed: back to requested"),
            run_pass(mon, &scheduled, &mon->stats->monitor_failed,
                     "execution failed: scheduled too long"),
            run_pass(mon, &restarted, &mon->stats->abandoned_restarted,
                     "execution abandoned: its worker restarted"),
            results ? run_pass(mon, &late, &mon->stats->abandoned_timeout,
                               "execution abandoned: no result within its timeout")
                    : 0,
            hearing ? run_pass(mon, &stale, &mon->stats->monitor_abandoned,
                               "execution abandoned: its worker is gone")
                    : 0,
        };
        bool full = false;
        for (int i = 0; i < 5; i++) {
            if (n[i] < 0)
                return;
            full |= n[i] >= batch;
        }
        if (!full)
            break;
    }
    if (hearing)
        retire_run(mon->retire);
    cancel_resend(mon->cancel);
}
