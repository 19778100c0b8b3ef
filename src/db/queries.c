/* Statements shared by the CLI and the executor's API (see warren/queries.h). */
#include <stddef.h>
#include <string.h>
#include "warren/exec_status.h"
#include "warren/queries.h"

/* clang-format off */
const char q_execution_doc[] =
    "SELECT (to_jsonb(e) || jsonb_build_object('wait_reason', warren_wait_reason(e, $2::int),"
    " 'traceparent', warren_traceparent(e.id, e.traceparent),"
    " 'events', coalesce((SELECT jsonb_agg(to_jsonb(v) - 'execution_id' - 'seq' ORDER BY v.seq)"
    "   FROM execution_history v WHERE v.execution_id = e.id), '[]'),"
    " 'dead_letters', coalesce((SELECT jsonb_agg(to_jsonb(d) - 'body' - 'headers' ORDER BY d.id)"
    "   FROM dead_letters d WHERE d.execution_id = e.id), '[]'),"
    " 'attempts', coalesce((SELECT jsonb_agg(to_jsonb(a) - 'execution_id' - 'seq' ORDER BY a.seq)"
    "   FROM execution_attempt_history a WHERE a.execution_id = e.id), '[]')))::text AS doc "
    "FROM executions e WHERE id = $1";

/* Filters that are NULL fold away in the plan (the parameters' values are known to it): with
 * a status the page is read from executions_status_id_idx, else from the primary key, both
 * backwards from the cursor. */
const char q_execution_list[] =
    "SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.id DESC), '[]')::text AS doc,"
    " min(e.id) AS last_id, count(*) AS n FROM (SELECT * FROM executions"
    " WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR action_ref = $2)"
    " AND ($3::text IS NULL OR worker = $3) AND ($4::timestamptz IS NULL OR created_at >= $4)"
    " AND ($5::bigint IS NULL OR id < $5) ORDER BY id DESC LIMIT $6::integer) e";

/* Liveness is the scheduler's own rule (schema 007's warren_worker_live and warren_worker_fresh,
 * by the database clock): live means online and fresh. A heartbeat committed after now() is
 * age 0. */
const char q_workers[] =
    "SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.id), '[]')::text AS doc FROM ("
    " SELECT w.*, greatest(extract(epoch FROM now() - w.last_heartbeat), 0) AS heartbeat_age_s,"
    " warren_worker_live(w, $1::integer) AS live,"
    " CASE WHEN w.status IN ('offline', 'retired') THEN w.status"
    "   WHEN warren_worker_fresh(w, $1::integer)"
    "     THEN CASE WHEN w.status = 'online' AND warren_worker_live(w, $1::integer) THEN 'live'"
    "       WHEN w.status = 'online' THEN 'suspect' ELSE w.status END"
    "   ELSE 'stale' END AS state,"
    " (SELECT count(*) FROM executions x WHERE x.worker = w.id AND x.status IN ("
    EXEC_SQL(SCHEDULING) ", " EXEC_SQL(SCHEDULED) ", " EXEC_SQL(RUNNING) ", " EXEC_SQL(CANCELING)
    "))::int AS in_flight FROM workers w) r";

const char q_submit[] =
    "INSERT INTO executions (action_ref, params, pinned_worker, timeout_s, submitted_by,"
    " retry_max_attempts, retry_on, fallback, queue_timeout_s, traceparent, priority, due_at)"
    " SELECT r.action_ref, coalesce(r.params, '{}'), r.pinned_worker, r.timeout_s, $2,"
    " r.retry_max_attempts, r.retry_on, r.fallback, r.queue_timeout_s, r.traceparent, "
    Q_SUBMIT_PRIORITY_DUE("r")
    " FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (action_ref text, params jsonb,"
    "   pinned_worker text, timeout_s integer, retry_max_attempts integer, retry_on text,"
    "   fallback text, queue_timeout_s integer, priority smallint, run_at timestamptz,"
    "   delay_s integer, traceparent text)) WITH ORDINALITY"
    "   AS r(action_ref, params, pinned_worker, timeout_s, retry_max_attempts, retry_on, fallback,"
    "   queue_timeout_s, priority, run_at, delay_s, traceparent, ord)"
    " ORDER BY r.ord RETURNING id, status, (to_jsonb(executions) || jsonb_build_object("
    "   'traceparent', warren_traceparent(id, traceparent)))::text AS row";

#define CANCEL_AT_ONCE "(" EXEC_SQL(REQUESTED) ", " EXEC_SQL(SCHEDULED) ")"
const char q_cancel[] =
    "WITH t AS (SELECT id, status AS before FROM executions WHERE id = $1 FOR UPDATE),"
    " u AS (UPDATE executions e SET"
    "   status = CASE WHEN t.before IN " CANCEL_AT_ONCE " THEN " EXEC_SQL(CANCELLED)
    "     ELSE " EXEC_SQL(CANCELING) " END,"
    "   error = CASE WHEN t.before IN " CANCEL_AT_ONCE " THEN 'Cancelled by ' || $2 ELSE e.error END,"
    "   cancelled_by = $2, cancel_requested_at = now(), wait_reason = NULL"
    "   FROM t WHERE e.id = t.id AND t.before IN (" EXEC_SQL(REQUESTED) ", "
    EXEC_SQL(SCHEDULED) ", " EXEC_SQL(RUNNING) ")"
    "   RETURNING e.*) "
    "SELECT t.before, coalesce(u.status, t.before) AS after, u.worker, u.attempt,"
    " coalesce(to_jsonb(u), (SELECT to_jsonb(x) FROM executions x WHERE x.id = t.id))::text AS row"
    " FROM t LEFT JOIN u ON u.id = t.id";
/* A manual retry: a new attempt that does not use up the policy (manual_retries counts it
 * apart). The row is locked, then a compare-and-swap on the status and attempt it had, so of
 * two retries at once the second finds it requested and changes nothing. */
#define RETRYABLE "(" EXEC_SQL(FAILED) ", " EXEC_SQL(TIMEOUT) ", " EXEC_SQL(ABANDONED) ")"
const char q_retry[] =
    "WITH t AS (SELECT id, status AS before, attempt FROM executions WHERE id = $1 FOR UPDATE),"
    " u AS (UPDATE executions e SET status = " EXEC_SQL(REQUESTED) ", due_at = now(),"
    "   manual_retries = e.manual_retries + 1, attempt_kind = 'manual',"
    "   error = NULL, result = NULL, outcome = NULL, started_at = NULL, ended_at = NULL,"
    "   incarnation = NULL, reported_at = NULL, effective_timeout_s = NULL,"
    "   dispatch_confirmed_at = NULL, wait_reason = NULL"
    "   FROM t WHERE e.id = t.id AND e.status = t.before AND e.attempt = t.attempt"
    "   AND t.before IN " RETRYABLE " RETURNING e.*) "
    "SELECT t.before, coalesce(u.status, t.before) AS after, t.attempt,"
    " coalesce(to_jsonb(u), (SELECT to_jsonb(x) FROM executions x WHERE x.id = t.id))::text AS row"
    " FROM t LEFT JOIN u ON u.id = t.id";
/* clang-format on */

/* clang-format off */
const char q_actions[] =
    "WITH conf AS (SELECT key AS action_ref, value AS limits FROM jsonb_each($1::jsonb)),"
    " counts AS (SELECT action_ref,"
    "   count(*) FILTER (WHERE status = " EXEC_SQL(REQUESTED) ") AS requested,"
    "   count(*) FILTER (WHERE status = " EXEC_SQL(SCHEDULING) ") AS scheduling,"
    "   count(*) FILTER (WHERE status = " EXEC_SQL(SCHEDULED) ") AS scheduled,"
    "   count(*) FILTER (WHERE status = " EXEC_SQL(RUNNING) ") AS running,"
    "   count(*) FILTER (WHERE status = " EXEC_SQL(CANCELING) ") AS canceling"
    "   FROM executions WHERE status IN (" EXEC_SQL(REQUESTED) ", " EXEC_SQL(SCHEDULING) ", "
    EXEC_SQL(SCHEDULED) ", " EXEC_SQL(RUNNING) ", " EXEC_SQL(CANCELING) ") GROUP BY action_ref),"
    " offered AS (SELECT DISTINCT unnest(capabilities) AS action_ref FROM workers"
    "   WHERE status <> 'retired'),"
    " refs AS (SELECT action_ref FROM conf UNION SELECT action_ref FROM counts"
    "   UNION SELECT action_ref FROM action_pauses WHERE resumed_at IS NULL"
    "   UNION SELECT action_ref FROM offered)"
    " SELECT coalesce(jsonb_agg(jsonb_build_object('action_ref', r.action_ref,"
    "   'configured', conf.action_ref IS NOT NULL,"
    "   'limits', jsonb_build_object('queue_timeout_s', conf.limits -> 'queue_timeout_s'),"
    "   'counts', jsonb_build_object('requested', coalesce(c.requested, 0),"
    "     'scheduling', coalesce(c.scheduling, 0), 'scheduled', coalesce(c.scheduled, 0),"
    "     'running', coalesce(c.running, 0), 'canceling', coalesce(c.canceling, 0)),"
    "   'paused', p.action_ref IS NOT NULL AND p.resumed_at IS NULL, 'paused_by', p.paused_by,"
    "   'paused_at', p.paused_at, 'resumed_by', p.resumed_by, 'resumed_at', p.resumed_at)"
    "   ORDER BY r.action_ref), '[]')::text AS doc"
    " FROM refs r LEFT JOIN conf ON conf.action_ref = r.action_ref"
    " LEFT JOIN counts c ON c.action_ref = r.action_ref"
    " LEFT JOIN action_pauses p ON p.action_ref = r.action_ref";

/* A pause already in force is kept as it is (its who and when); resuming one not paused
 * changes nothing. Each answers the row as it is now, with whether this call changed it. */
#define PAUSE_DOC(p)                                                                              \
    "jsonb_build_object('action_ref', " p ".action_ref, 'paused', " p ".resumed_at IS NULL,"     \
    " 'paused_by', " p ".paused_by, 'paused_at', " p ".paused_at, 'resumed_by', " p              \
    ".resumed_by, 'resumed_at', " p ".resumed_at, 'changed', "
const char q_action_pause[] =
    "WITH u AS (INSERT INTO action_pauses AS t (action_ref, paused_by) VALUES ($1, $2)"
    "   ON CONFLICT (action_ref) DO UPDATE SET paused_by = excluded.paused_by,"
    "   paused_at = now(), resumed_by = NULL, resumed_at = NULL WHERE t.resumed_at IS NOT NULL"
    "   RETURNING *)"
    " SELECT (" PAUSE_DOC("p") "EXISTS (SELECT 1 FROM u)))::text AS doc"
    " FROM (SELECT * FROM u UNION ALL SELECT * FROM action_pauses"
    "   WHERE action_ref = $1 AND NOT EXISTS (SELECT 1 FROM u)) p";

const char q_action_resume[] =
    "WITH u AS (UPDATE action_pauses SET resumed_by = $2, resumed_at = now()"
    "   WHERE action_ref = $1 AND resumed_at IS NULL RETURNING *)"
    " SELECT coalesce((SELECT " PAUSE_DOC("u") "true) FROM u),"
    "   (SELECT " PAUSE_DOC("a") "false) FROM action_pauses a WHERE a.action_ref = $1),"
    "   jsonb_build_object('action_ref', $1::text, 'paused', false, 'changed', false))::text"
    "   AS doc";
/* clang-format on */

const char q_investigate[] = "SELECT outcome, status, record_id, doc::text AS doc"
                             " FROM warren_investigate($1::bigint, $2, $3)";

const char q_complete[] =
    "SELECT outcome, before, attempt, why, \"row\"::text AS row"
    " FROM warren_complete_by_hand($1::bigint, $2::jsonb, $3, $4, $5::int, $6::jsonb)";

const char *retry_refusal(const char *before)
{
    static const struct {
        const char *status, *why;
    } refusals[] = {
        {EXEC_NAME_COMPLETED, "it completed; a completed execution is not retried"},
        {EXEC_NAME_RUNNING, "it is running; wait for it to end (or cancel it) first"},
        {EXEC_NAME_CANCELING, "it is being cancelled; a cancelled execution is not retried"},
        {EXEC_NAME_CANCELLED, "it was cancelled; a cancelled execution is not retried"},
        {EXEC_NAME_REQUESTED, "it is already waiting for a dispatch (requested)"},
        {EXEC_NAME_SCHEDULING, "it is being dispatched; it has not ended"},
        {EXEC_NAME_SCHEDULED, "it is dispatched (scheduled); it has not ended"},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (!strcmp(before, refusals[i].status))
            return refusals[i].why;
    return NULL;
}

const char q_wait_register[] =
    "WITH expired AS (DELETE FROM execution_waiters WHERE until < now() - interval '1 minute'),"
    " reg AS (INSERT INTO execution_waiters (execution_id, until)"
    "         VALUES ($1::bigint, now() + make_interval(secs => $2::int)))"
    " SELECT status IN (" EXEC_SQL(COMPLETED) "," EXEC_SQL(FAILED) "," EXEC_SQL(
        CANCELLED) ","
                   " " EXEC_SQL(TIMEOUT) "," EXEC_SQL(
                       ABANDONED) ") AS ended"
                                  " FROM executions WHERE id = $1::bigint FOR SHARE";
