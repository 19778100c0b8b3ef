/* Submissions with idempotency keys (warren/idempotency.h): one statement, then a savepoint's
 * undo when a key was in conflict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/db.h"
#include "warren/idempotency.h"
#include "warren/queries.h"

/*
 * Every submission gets its id from the sequence first, so that its key row can name it in the
 * same statement. The key rows are written in key order (two batches that share keys take their
 * locks in one order, never a deadlock) with ON CONFLICT: a key another transaction holds is
 * waited for, then read as committed, locked, and taken over only once it has expired (the
 * CASEs keep the row as it was otherwise; RETURNING then shows the execution it names). A key
 * that names another id is a replay, and a conflict when its request hash differs; the
 * executions are inserted only when no submission is in conflict. The request hash is md5 of
 * the submission's jsonb text (jsonb orders members and drops white space) without the key,
 * with params defaulting to {} as the column does.
 */
/* clang-format off */
#define TAKE(col) col " = CASE WHEN t.expires_at <= now() THEN excluded." col " ELSE t." col " END"
static const char submit_sql[] =
    "WITH r AS (SELECT x.*, nextval(pg_get_serial_sequence('executions', 'id')) AS new_id,"
    "   md5(((($1::jsonb -> (x.ord::integer - 1)) - 'idempotency_key' - 'traceparent')"
    "     || jsonb_build_object('params', coalesce(x.params, '{}')))::text) AS request_hash"
    " FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (action_ref text, params jsonb,"
    "   pinned_worker text, timeout_s integer, retry_max_attempts integer, retry_on text,"
    "   fallback text, queue_timeout_s integer, priority smallint, run_at timestamptz,"
    "   delay_s integer, idempotency_key text, traceparent text)) WITH ORDINALITY"
    "   AS x(action_ref, params, pinned_worker, timeout_s, retry_max_attempts, retry_on, fallback,"
    "   queue_timeout_s, priority, run_at, delay_s, idempotency_key, traceparent, ord)),"
    " k AS (INSERT INTO execution_idempotency_keys AS t"
    "   (idempotency_key, execution_id, request_hash, expires_at)"
    "   SELECT idempotency_key, new_id, request_hash, now() + make_interval(secs => $3::integer)"
    "   FROM r WHERE idempotency_key IS NOT NULL ORDER BY idempotency_key"
    "   ON CONFLICT (idempotency_key) DO UPDATE SET " TAKE("execution_id") ", "
    TAKE("request_hash") ", " TAKE("created_at") ", " TAKE("expires_at")
    "   RETURNING t.idempotency_key, t.execution_id, t.request_hash),"
    " m AS (SELECT r.ord, r.new_id, k.execution_id,"
    "   coalesce(k.execution_id <> r.new_id, false) AS replayed,"
    "   coalesce(k.execution_id <> r.new_id AND k.request_hash <> r.request_hash, false)"
    "   AS conflict FROM r LEFT JOIN k ON k.idempotency_key = r.idempotency_key),"
    " ins AS (INSERT INTO executions (id, action_ref, params, pinned_worker, timeout_s,"
    "   submitted_by, retry_max_attempts, retry_on, fallback, queue_timeout_s, traceparent,"
    "   priority, due_at)"
    "   OVERRIDING SYSTEM VALUE"
    "   SELECT r.new_id, r.action_ref, coalesce(r.params, '{}'), r.pinned_worker, r.timeout_s, $2,"
    "   r.retry_max_attempts, r.retry_on, r.fallback, r.queue_timeout_s, r.traceparent, "
    Q_SUBMIT_PRIORITY_DUE("r")
    "   FROM r JOIN m ON m.ord = r.ord"
    "   WHERE NOT m.replayed AND NOT EXISTS (SELECT 1 FROM m WHERE m.conflict)"
    "   ORDER BY r.ord RETURNING id, to_jsonb(executions) AS row)"
    " SELECT coalesce(m.execution_id, m.new_id) AS id, m.replayed, m.conflict,"
    "   (coalesce(ins.row, (SELECT to_jsonb(e) FROM executions e WHERE e.id = m.execution_id))"
    "   || jsonb_build_object('replayed', m.replayed, 'traceparent', warren_traceparent("
    "     coalesce(m.execution_id, m.new_id), coalesce(ins.row, (SELECT to_jsonb(e)"
    "     FROM executions e WHERE e.id = m.execution_id)) ->> 'traceparent')))::text AS row"
    " FROM m LEFT JOIN ins ON ins.id = m.new_id ORDER BY m.ord";
/* clang-format on */

/* A replayed execution committed after the statement began is not in its snapshot; the next
 * statement sees it. */
static const char replayed_row_sql[] =
    "SELECT (to_jsonb(e) || '{\"replayed\": true}')::text FROM executions e WHERE e.id = $1";

static int single_row(PGconn *db, idem_outcome_t *out, char *err, size_t errlen)
{
    PGresult *res = NULL;
    const char *text = PQgetisnull(out->res, 0, 3) ? NULL : PQgetvalue(out->res, 0, 3);
    if (!text) {
        const char *p[] = {PQgetvalue(out->res, 0, 0)};
        if (db_exec(db, replayed_row_sql, 1, p, &res, err, errlen) != 0)
            return -1;
        text = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : NULL;
    }
    out->row = text ? strdup(text) : NULL;
    if (!out->row)
        snprintf(err, errlen, "%s", text ? "out of memory" : "the replayed execution is gone");
    PQclear(res);
    return out->row ? 0 : -1;
}

int idem_submit(PGconn *db, const char *rows, const char *who, int window_s, idem_outcome_t *out,
                char *err, size_t errlen)
{
    *out = (idem_outcome_t){.conflict = -1};
    char window[16];
    snprintf(window, sizeof window, "%d", window_s);
    const char *p[] = {rows, who, window};
    if (db_exec(db, "SAVEPOINT warren_idempotency", 0, NULL, NULL, err, errlen) != 0 ||
        db_exec(db, submit_sql, 3, p, &out->res, err, errlen) != 0)
        return -1;
    int n = PQntuples(out->res);
    for (int i = 0; i < n; i++) {
        if (out->conflict < 0 && PQgetvalue(out->res, i, 2)[0] == 't')
            out->conflict = i;
        out->replayed += PQgetvalue(out->res, i, 1)[0] == 't';
    }
    if (out->conflict >= 0)
        return db_exec(db, "ROLLBACK TO SAVEPOINT warren_idempotency", 0, NULL, NULL, err, errlen);
    return n == 1 ? single_row(db, out, err, errlen) : 0;
}

void idem_outcome_free(idem_outcome_t *o)
{
    PQclear(o->res);
    free(o->row);
    *o = (idem_outcome_t){.conflict = -1};
}
