/* A new attempt of an execution that is not counted against the retry policy (warren/dlq.h):
 * the redrive of a dead letter. One fenced UPDATE and the note on its history row. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/db.h"
#include "warren/dlq.h"

/* clang-format off */
static const char reattempt_sql[] =
    "WITH cur AS (SELECT id, status, attempt FROM executions WHERE id = $1 FOR UPDATE),"
    " u AS (UPDATE executions e SET status = 'requested', attempt = e.attempt + 1,"
    "   redrive_count = e.redrive_count + 1,"
    "   pinned_worker = CASE WHEN $4::bool THEN NULL ELSE coalesce($3, e.pinned_worker) END,"
    "   error = NULL, result = NULL, outcome = NULL, ended_at = NULL, started_at = NULL,"
    "   scheduled_at = NULL, dispatch_confirmed_at = NULL, wait_reason = NULL,"
    "   incarnation = NULL, reported_at = NULL, effective_timeout_s = NULL"
    "   FROM cur WHERE e.id = cur.id AND cur.status IN ('failed', 'timeout', 'abandoned')"
    "   AND cur.attempt = $2::int RETURNING e.attempt) "
    "SELECT cur.status, (SELECT attempt FROM u) FROM cur";

static const char note_sql[] =
    "UPDATE execution_events SET note = $2 WHERE id = (SELECT max(id) FROM execution_events"
    " WHERE execution_id = $1 AND to_status = 'requested')";
/* clang-format on */

int reattempt(PGconn *db, int64_t id, int attempt, const char *worker, bool unpin, const char *note,
              int *new_attempt, char *status, size_t statuslen, char *err, size_t errlen)
{
    char id_text[24], attempt_text[16];
    snprintf(id_text, sizeof id_text, "%" PRId64, id);
    snprintf(attempt_text, sizeof attempt_text, "%d", attempt);
    const char *p[] = {id_text, attempt_text, worker, unpin ? "true" : "false"};
    PGresult *res = NULL;
    if (db_exec(db, reattempt_sql, 4, p, &res, err, errlen) != 0)
        return -1;
    status[0] = '\0';
    if (PQntuples(res) == 0 || PQgetisnull(res, 0, 1)) {
        if (PQntuples(res) > 0)
            snprintf(status, statuslen, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        return 0;
    }
    *new_attempt = atoi(PQgetvalue(res, 0, 1));
    PQclear(res);
    const char *q[] = {id_text, note};
    return db_exec(db, note_sql, 2, q, NULL, err, errlen) == 0 ? 1 : -1;
}
