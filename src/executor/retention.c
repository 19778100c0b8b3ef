/*
 * Retention (docs/dead-letters.md, "Retention"): every retention.interval_s, in batches of
 * retention.batch_size under SKIP LOCKED, closed dead letters resolved more than
 * dead_letters.retention_days ago (and announced: an unemitted record is kept until its event
 * went out), terminal executions that ended more than executions.retention_days ago (with their
 * history, and never while an open record names them), and the history rows of terminal
 * executions older than execution_history.retention_days. A key at 0, the default, prunes
 * nothing; pending and investigating records are never pruned. Idempotency keys are pruned
 * once expired (api.idempotency_window_s), always.
 */
#include <stdio.h>
#include <stdlib.h>
#include "executor/retention.h"
#include "warren/db.h"
#include "warren/log.h"

#define RETENTION_ROUNDS 10
#define TERMINAL "('completed', 'failed', 'cancelled', 'timeout', 'abandoned')"

/* clang-format off */
static const char dead_letters_sql[] =
    "DELETE FROM dead_letters WHERE id IN (SELECT id FROM dead_letters"
    " WHERE resolution NOT IN ('pending', 'investigating') AND emitted_at IS NOT NULL"
    " AND resolved_at < now() - make_interval(days => $1::integer)"
    " ORDER BY id LIMIT $2::integer FOR UPDATE SKIP LOCKED)";

static const char executions_sql[] =
    "DELETE FROM executions WHERE id IN (SELECT e.id FROM executions e"
    " WHERE e.status IN " TERMINAL " AND e.ended_at < now() - make_interval(days => $1::integer)"
    " AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.execution_id = e.id"
    "   AND d.resolution IN ('pending', 'investigating'))"
    " ORDER BY e.id LIMIT $2::integer FOR UPDATE OF e SKIP LOCKED)";

static const char history_sql[] =
    "DELETE FROM execution_events WHERE id IN (SELECT v.id FROM execution_events v"
    " JOIN executions e ON e.id = v.execution_id WHERE e.status IN " TERMINAL
    " AND v.at < now() - make_interval(days => $1::integer)"
    " ORDER BY v.id LIMIT $2::integer FOR UPDATE OF v SKIP LOCKED)";

/* Idempotency keys past their window (docs/api.md): a key that expired is free to be taken
 * again whether or not it was pruned; pruning keeps the table to the keys of one window. */
static const char keys_sql[] =
    "DELETE FROM execution_idempotency_keys WHERE idempotency_key IN (SELECT idempotency_key"
    " FROM execution_idempotency_keys WHERE expires_at <= now() - make_interval(days => $1::integer)"
    " ORDER BY expires_at LIMIT $2::integer FOR UPDATE SKIP LOCKED)";
/* clang-format on */

typedef struct prune {
    const char *sql;
    const char *params[2];
    int rows;
} prune_t;

static int prune_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    prune_t *p = arg;
    PGresult *res = NULL;
    int rc = db_exec(db, p->sql, 2, p->params, &res, err, errlen);
    p->rows = rc == 0 ? atoi(PQcmdTuples(res)) : 0;
    PQclear(res);
    return rc;
}

/* Prune one table in bounded batches of what is older than days; counts into *counter. */
static void prune(retention_t *r, const char *what, const char *sql, int days, uint64_t *counter)
{
    char d[16], limit[16];
    snprintf(d, sizeof d, "%d", days);
    snprintf(limit, sizeof limit, "%d", r->cfg->retention.batch_size);
    prune_t p = {.sql = sql, .params = {d, limit}};
    uint64_t total = 0;
    for (int round = 0; round < RETENTION_ROUNDS; round++) {
        if (dbc_transaction(r->db, what, prune_fn, &p) != DBC_OK)
            break;
        total += (uint64_t)p.rows;
        if (p.rows < r->cfg->retention.batch_size)
            break;
    }
    *counter += total;
    if (total > 0) {
        char n[24];
        snprintf(n, sizeof n, "%llu", (unsigned long long)total);
        log_kv(LOG_INFO, "retention: pruned", "what", what, "rows", n, "older_than_days", d, NULL);
    }
}

void retention_run(retention_t *r)
{
    const warren_config_t *c = r->cfg;
    if (c->dead_letters.retention_days > 0) /* 0: keep them */
        prune(r, "dead letters", dead_letters_sql, c->dead_letters.retention_days,
              &r->stats->pruned_dead_letters);
    if (c->execution_history.retention_days > 0)
        prune(r, "execution history", history_sql, c->execution_history.retention_days,
              &r->stats->pruned_history);
    if (c->executions.retention_days > 0)
        prune(r, "executions", executions_sql, c->executions.retention_days,
              &r->stats->pruned_executions);
    prune(r, "idempotency keys", keys_sql, 0, &r->stats->pruned_idem_keys); /* expired */
}
