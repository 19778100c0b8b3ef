/*
 * The queue deadline sweep (deadlines.h): requested executions past due_at + queue_timeout_s
 * fail with reason queue_timeout. Several executors may run it at once (SKIP LOCKED, and the
 * UPDATE is fenced on the status).
 */
#include <stdio.h>
#include <stdlib.h>
#include "executor/deadlines.h"
#include "warren/db.h"
#include "warren/exec_status.h"
#include "warren/log.h"

#define DEADLINES_ROUNDS 10

/* clang-format off */
/* One batch: the partial index executions_queue_deadline_idx (due_at) holds only requested rows
 * with a deadline; queue_timeout_s >= 1, so a passed deadline means due_at <= now() - 1 s, which
 * bounds the scan. */
static const char sweep_sql[] =
    "UPDATE executions e SET status = " EXEC_SQL(FAILED) ", wait_reason = NULL,"
    " error = '" QUEUE_TIMEOUT_ERROR " (' || e.queue_timeout_s || ' s)',"
    " result = jsonb_build_object('error', '" QUEUE_TIMEOUT_ERROR "', 'reason', 'queue_timeout',"
    "   'queue_timeout_s', e.queue_timeout_s,"
    "   'deadline', e.due_at + make_interval(secs => e.queue_timeout_s),"
    "   'message', 'It was still requested (never dispatched) when its deadline passed.')"
    " WHERE e.id IN (SELECT x.id FROM executions x WHERE x.status = " EXEC_SQL(REQUESTED)
    "   AND x.queue_timeout_s IS NOT NULL AND x.due_at <= now() - interval '1 second'"
    "   AND x.due_at + make_interval(secs => x.queue_timeout_s) <= now()"
    "   ORDER BY x.due_at LIMIT $1 FOR UPDATE SKIP LOCKED)"
    " AND e.status = " EXEC_SQL(REQUESTED)
    " RETURNING e.id, e.action_ref, e.queue_timeout_s";
/* clang-format on */

void deadlines_run(deadlines_t *d)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", d->cfg->executor.batch_size);
    const char *params[] = {limit};
    /* Full batches mean more are waiting; a bounded number of rounds keeps the loop turning. */
    for (int round = 0; round < DEADLINES_ROUNDS; round++) {
        PGresult *res = NULL;
        if (dbc_query(d->db, "failing executions past their queue timeout", sweep_sql, 1, params,
                      &res) != DBC_OK)
            break;
        int n = PQntuples(res);
        for (int r = 0; r < n; r++)
            log_kv(LOG_WARN, "execution failed: queue timeout passed while requested",
                   "execution_id", PQgetvalue(res, r, 0), "action_ref", PQgetvalue(res, r, 1),
                   "queue_timeout_s", PQgetvalue(res, r, 2), "reason", "queue_timeout", NULL);
        d->stats->queue_timeouts += (uint64_t)n;
        PQclear(res);
        if (n < d->cfg->executor.batch_size)
            break;
    }
}
