/* The executor's PostgreSQL lanes: lazy connect, reconnect with backoff, transactions, pools. */
#include <stdlib.h>
#include <string.h>
#include "executor/dbconn.h"
#include "warren/db.h"
#include "warren/evloop.h"
#include "warren/log.h"

#define RECONNECT_BASE_MS 200
#define RECONNECT_CAP_MS 5000
/* How much longer than statement_timeout the client waits before it gives the server up. */
#define CLIENT_GRACE_MAX_MS 1000

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

void dbc_lost(dbconn_t *d)
{
    drop(d);
}

static int simple(PGconn *db, const char *sql, char *err, size_t errlen)
{
    return db_exec(db, sql, 0, NULL, NULL, err, errlen);
}

void dbc_set_statement_timeout(dbconn_t *d, int timeout_ms)
{
    int ms = timeout_ms > 0 ? timeout_ms : 0;
    d->rebound |= d->conn && ms != d->statement_timeout_ms;
    d->statement_timeout_ms = ms;
}

/*
 * Every statement of the executor runs in its only event loop, so none may wait long: the
 * server cancels one that runs past statement_timeout (an error the caller retries), and the
 * client gives up on a server that does not answer at all a little later (SIGSTOPped, a
 * failover, a partition: the kernel may keep such a connection for many minutes).
 */
static void bound(dbconn_t *d)
{
    d->rebound = false;
    char sql[64], err[ERRBUF_SIZE];
    snprintf(sql, sizeof sql, "SET statement_timeout = %d", d->statement_timeout_ms);
    if (simple(d->conn, sql, err, sizeof err) != 0)
        log_kv(LOG_WARN, "could not set statement_timeout", "error", err, NULL);
    int grace = d->statement_timeout_ms / 2 < CLIENT_GRACE_MAX_MS ? d->statement_timeout_ms / 2
                                                                  : CLIENT_GRACE_MAX_MS;
    db_set_timeout(d->conn, d->statement_timeout_ms + grace);
    db_set_prepare(d->conn, d->prepare);
}

void dbc_set_prepare(dbconn_t *d, bool on)
{
    d->prepare = on;
}

PGconn *dbc_get(dbconn_t *d)
{
    if (d->conn && d->rebound)
        bound(d);
    if (d->conn)
        return d->conn;
    if (now_mono_ms() < d->next_try_ms)
        return NULL;
    char err[ERRBUF_SIZE];
    d->conn = db_connect(d->url, d->connect_timeout_s, err, sizeof err);
    if (!d->conn) {
        drop(d);
        if (!d->down_logged)
            log_kv(LOG_ERROR, "database unavailable; work waits until it is back", "lane",
                   d->lane ? d->lane : "", "error", err, NULL);
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
    bound(d);
    backoff_reset(&d->backoff);
    if (d->down_logged || d->reconnects > 0)
        log_kv(LOG_INFO, "database connection restored", NULL);
    d->down_logged = false;
    d->reconnects++;
    return d->conn;
}

/* A failed unit of work: roll back, classify, log, drop a lost connection. */
static dbc_result_t failed(dbconn_t *d, PGconn *db, bool in_transaction, const char *what,
                           const char *err)
{
    d->errors++;
    snprintf(d->last_error, sizeof d->last_error, "%s", err);
    bool lost = db_connection_lost(db);
    char sqlstate[6];
    snprintf(sqlstate, sizeof sqlstate, "%s", db_last_sqlstate(db));
    if (!lost && in_transaction) {
        char ignored[ERRBUF_SIZE];
        (void)simple(db, "ROLLBACK", ignored, sizeof ignored);
        lost = db_connection_lost(db);
    }
    /* Serialization failures, deadlocks, lock and statement timeouts say nothing about the
     * input: the same work is tried again later, like after a lost connection. */
    bool transient = !lost && db_sqlstate_transient(sqlstate);
    log_kv(lost || transient ? LOG_WARN : LOG_ERROR,
           lost        ? "database connection lost"
           : transient ? "database error (transient; retrying later)"
                       : "database error",
           "during", what, "lane", d->lane ? d->lane : "", "error", err, NULL);
    if (lost) {
        drop(d);
        d->down_logged = true;
    }
    return lost || transient ? DBC_UNAVAILABLE : DBC_FAILED;
}

/* How long a unit of work waits for its lane's connection: another unit of work on it takes
 * at most its statements' bound, so a few of them. */
static int64_t lock_deadline(const dbconn_t *d)
{
    int64_t per = d->statement_timeout_ms > 0 ? d->statement_timeout_ms : 30000;
    return now_mono_ms() + 4 * per + CLIENT_GRACE_MAX_MS;
}

static bool take(dbconn_t *d, const char *what)
{
    if (fiber_lock(&d->lock, lock_deadline(d)))
        return true;
    log_kv(LOG_WARN, "database lane busy; retrying later", "during", what, "lane",
           d->lane ? d->lane : "", NULL);
    snprintf(d->last_error, sizeof d->last_error, "the %s lane was busy", d->lane ? d->lane : "");
    return false;
}

dbc_result_t dbc_transaction(dbconn_t *d, const char *what, dbc_work_fn work, void *arg)
{
    if (!take(d, what))
        return DBC_UNAVAILABLE;
    dbc_result_t rc = DBC_UNAVAILABLE;
    PGconn *db = dbc_get(d);
    char err[ERRBUF_SIZE] = "";
    if (db && simple(db, "BEGIN", err, sizeof err) == 0 && work(db, arg, err, sizeof err) == 0 &&
        simple(db, "COMMIT", err, sizeof err) == 0)
        rc = DBC_OK;
    else if (db)
        rc = failed(d, db, true, what, err);
    fiber_unlock(&d->lock);
    return rc;
}

dbc_result_t dbc_statement(dbconn_t *d, const char *what, dbc_work_fn work, void *arg)
{
    if (!take(d, what))
        return DBC_UNAVAILABLE;
    dbc_result_t rc = DBC_UNAVAILABLE;
    PGconn *db = dbc_get(d);
    char err[ERRBUF_SIZE] = "";
    if (db && work(db, arg, err, sizeof err) == 0)
        rc = DBC_OK;
    else if (db)
        rc = failed(d, db, false, what, err);
    fiber_unlock(&d->lock);
    return rc;
}

int dbc_query_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    dbc_query_work_t *q = arg;
    PQclear(q->res);
    q->res = NULL;
    return db_exec(db, q->sql, q->nparams, q->params, &q->res, err, errlen);
}

dbc_result_t dbc_query(dbconn_t *d, const char *what, const char *sql, int nparams,
                       const char *const *params, PGresult **res)
{
    dbc_query_work_t q = {sql, nparams, params, NULL};
    dbc_result_t rc = dbc_statement(d, what, dbc_query_fn, &q);
    if (rc != DBC_OK) {
        PQclear(q.res);
        q.res = NULL;
    }
    *res = q.res;
    return rc;
}

/* ---- pools ---- */

int dbc_pool_init(dbc_pool_t *p, const char *lane, size_t n, size_t max_waiting, const char *url,
                  int connect_timeout_s)
{
    memset(p, 0, sizeof *p);
    p->conns = calloc(n, sizeof *p->conns);
    if (!p->conns)
        return -1;
    p->n = n;
    p->max_waiting = max_waiting;
    for (size_t i = 0; i < n; i++) {
        if (dbc_init(&p->conns[i], url, connect_timeout_s) != 0)
            return -1;
        p->conns[i].lane = lane;
    }
    return 0;
}

void dbc_pool_free(dbc_pool_t *p)
{
    for (size_t i = 0; p->conns && i < p->n; i++)
        dbc_free(&p->conns[i]);
    free(p->conns);
    memset(p, 0, sizeof *p);
}

static dbconn_t *pool_free_conn(dbc_pool_t *p)
{
    /* An open connection first: a closed one costs a connect. */
    dbconn_t *closed = NULL;
    for (size_t i = 0; i < p->n; i++) {
        dbconn_t *d = &p->conns[i];
        if (fiber_lock_held(&d->lock))
            continue;
        if (d->conn)
            return d;
        closed = closed ? closed : d;
    }
    return closed;
}

dbconn_t *dbc_pool_acquire(dbc_pool_t *p, int64_t deadline_ms)
{
    for (;;) {
        dbconn_t *d = pool_free_conn(p);
        if (d && fiber_lock(&d->lock, deadline_ms))
            return d;
        if (!fiber_active() || p->waiting >= p->max_waiting) {
            p->refused++;
            return NULL;
        }
        p->waiting++;
        int woken = fiber_cond_wait(&p->freed, deadline_ms);
        p->waiting--;
        if (!woken) {
            p->refused++;
            return NULL;
        }
    }
}

void dbc_pool_release(dbc_pool_t *p, dbconn_t *d)
{
    fiber_unlock(&d->lock);
    if (!fiber_lock_held(&d->lock))
        fiber_cond_signal(&p->freed);
}

void dbc_pool_configure(dbc_pool_t *p, int statement_timeout_ms, bool prepare)
{
    for (size_t i = 0; i < p->n; i++) {
        dbc_set_statement_timeout(&p->conns[i], statement_timeout_ms);
        dbc_set_prepare(&p->conns[i], prepare);
    }
}

size_t dbc_pool_open(const dbc_pool_t *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->conns[i].conn != NULL;
    return n;
}

uint64_t dbc_pool_errors(const dbc_pool_t *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->conns[i].errors;
    return n;
}

uint64_t dbc_lanes_errors(const dbc_lanes_t *l)
{
    uint64_t n = 0;
    for (size_t i = 0; i < DBC_POOLS_MAX; i++)
        n += l->pools[i] ? dbc_pool_errors(l->pools[i]) : 0;
    for (size_t i = 0; i < DBC_LANES_MAX; i++)
        n += l->lanes[i] ? l->lanes[i]->errors : 0;
    return n;
}

bool dbc_lanes_up(const dbc_lanes_t *l)
{
    for (size_t i = 0; i < DBC_LANES_MAX; i++) {
        const dbconn_t *d = l->lanes[i];
        if (d && !d->conn && (d->reconnects > 0 || d->down_logged))
            return false;
    }
    return true;
}

uint64_t dbc_lanes_reconnects(const dbc_lanes_t *l)
{
    uint64_t n = 0;
    for (size_t i = 0; i < DBC_LANES_MAX; i++)
        n += l->lanes[i] ? l->lanes[i]->reconnects : 0;
    return n;
}
