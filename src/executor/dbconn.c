/* The executor's PostgreSQL connection: lazy connect, reconnect with backoff, transactions. */
#include <stdlib.h>
#include <string.h>
#include "executor/dbconn.h"
#include "warren/db.h"
#include "warren/evloop.h"
#include "warren/log.h"

#define RECONNECT_BASE_MS 200
#define RECONNECT_CAP_MS 10000

int dbc_init(dbconn_t *d, const char *url, int connect_timeout_s)
{
    memset(d, 0, sizeof *d);
    d->url = strdup(url ? url : "");
    d->connect_timeout_s = connect_timeout_s;
    backoff_init(&d->backoff, RECONNECT_BASE_MS, RECONNECT_CAP_MS);
    return d->url ? 0 : -1;
}

void dbc_free(dbconn_t *d)
{
    if (d->conn)
        PQfinish(d->conn);
    free(d->url);
    memset(d, 0, sizeof *d);
}

static void drop(dbconn_t *d)
{
    if (d->conn)
        PQfinish(d->conn);
    d->conn = NULL;
    int64_t delay = backoff_next(&d->backoff, evloop_random());
    d->next_try_ms = now_mono_ms() + delay;
}

static int simple(PGconn *db, const char *sql, char *err, size_t errlen)
{
    return db_exec(db, sql, 0, NULL, NULL, err, errlen);
}

PGconn *dbc_get(dbconn_t *d)
{
    if (d->conn)
        return d->conn;
    if (now_mono_ms() < d->next_try_ms)
        return NULL;
    char err[ERRBUF_SIZE];
    d->conn = db_connect(d->url, d->connect_timeout_s, err, sizeof err);
    if (!d->conn) {
        drop(d);
        if (!d->down_logged)
            log_kv(LOG_ERROR, "database unavailable; work waits until it is back", "error", err,
                   NULL);
        d->down_logged = true;
        return NULL;
    }
    /* Short OLTP statements: JIT compiling them costs far more than it saves, and the
     * claim statement's estimate can cross jit_above_cost with a large backlog. Sorts off:
     * every ORDER BY here has an index in that order, but after a burst of submissions the
     * statistics still say "a few requested rows" and the planner would sort the whole
     * backlog on every tick instead of reading the first rows of the partial index. */
    if (simple(d->conn, "SET jit = off", err, sizeof err) != 0 ||
        simple(d->conn, "SET enable_sort = off", err, sizeof err) != 0)
        log_kv(LOG_WARN, "could not tune the executor's session", "error", err, NULL);
    backoff_reset(&d->backoff);
    if (d->down_logged || d->reconnects > 0)
        log_kv(LOG_INFO, "database connection restored", NULL);
    d->down_logged = false;
    d->reconnects++;
    return d->conn;
}

dbc_result_t dbc_transaction(dbconn_t *d, const char *what, dbc_work_fn work, void *arg)
{
    PGconn *db = dbc_get(d);
    if (!db)
        return DBC_UNAVAILABLE;
    char err[ERRBUF_SIZE] = "";
    if (simple(db, "BEGIN", err, sizeof err) == 0 && work(db, arg, err, sizeof err) == 0 &&
        simple(db, "COMMIT", err, sizeof err) == 0)
        return DBC_OK;
    d->errors++;
    bool lost = db_connection_lost(db);
    if (!lost) {
        char ignored[ERRBUF_SIZE];
        (void)simple(db, "ROLLBACK", ignored, sizeof ignored);
        lost = db_connection_lost(db);
    }
    log_kv(lost ? LOG_WARN : LOG_ERROR, lost ? "database connection lost" : "database error",
           "during", what, "error", err, NULL);
    if (lost) {
        drop(d);
        d->down_logged = true;
        return DBC_UNAVAILABLE;
    }
    return DBC_FAILED;
}
