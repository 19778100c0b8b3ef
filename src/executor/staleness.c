/*
 * The staleness detector (docs/dead-letters.md, "Staleness"): every staleness.interval_s, one
 * round of schema 022's warren_staleness_sweep in batches of executor.batch_size: stale
 * executions end (failed; abandoned when running) with a staleness_timeout record, and those
 * past staleness.warning_pct of their threshold are named in a log line and counted, once per
 * status and attempt. Several executors may run it at once (SKIP LOCKED, attempt fences, the
 * record's dedup key). GET /api/v1/staleness (api_staleness.c) shows every non-terminal
 * execution's health.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/staleness.h"
#include "warren/db.h"
#include "warren/dlq.h"
#include "warren/log.h"

#define STALENESS_ROUNDS 10
#define STALENESS_LIST_DEFAULT 1000

static const char sweep_sql[] = "SELECT id, kind, from_status, to_status, coalesce(worker, ''),"
                                " round(time_in_state_s::numeric, 1), threshold_s"
                                " FROM warren_staleness_sweep($1::jsonb, $2::integer)";

/* Log and count what one batch did; returns how many rows it had. */
static int report(staleness_t *st, PGresult *res)
{
    int n = PQntuples(res);
    for (int r = 0; r < n; r++) {
        const char *id = PQgetvalue(res, r, 0), *from = PQgetvalue(res, r, 2);
        bool stale = !strcmp(PQgetvalue(res, r, 1), "stale");
        if (stale) {
            st->stats->staleness_timeouts++;
            stats_dead_letter(st->stats, "staleness_timeout", 1);
        } else {
            st->stats->staleness_warnings++;
        }
        log_kv(LOG_WARN,
               stale ? "execution stale: ended, with a staleness_timeout record"
                     : "execution nearing its staleness threshold",
               "execution_id", id, "status", from, "to", PQgetvalue(res, r, 3), "worker",
               PQgetvalue(res, r, 4), "time_in_state_s", PQgetvalue(res, r, 5), "threshold_s",
               PQgetvalue(res, r, 6), NULL);
    }
    return n;
}

void staleness_run(staleness_t *st)
{
    char *cfg = dlq_staleness_cfg(st->cfg), limit[16];
    if (!cfg)
        return;
    snprintf(limit, sizeof limit, "%d", st->cfg->executor.batch_size);
    const char *params[] = {cfg, limit};
    /* Full batches mean more are waiting; a bounded number of rounds keeps the loop turning. */
    for (int round = 0; round < STALENESS_ROUNDS; round++) {
        PGresult *res = NULL;
        if (dbc_query(st->db, "checking staleness", sweep_sql, 2, params, &res) != DBC_OK)
            break;
        int n = report(st, res);
        PQclear(res);
        if (n < st->cfg->executor.batch_size)
            break;
    }
    free(cfg);
}
