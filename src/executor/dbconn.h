/*
 * One PostgreSQL connection of the executor, a lane (docs/executor.md): connect lazily,
 * reconnect with backoff after a loss, and run a unit of work inside BEGIN/COMMIT. Every
 * statement goes through db_exec, bounded by the server's statement_timeout and by a
 * client-side deadline a little later (dbc_set_statement_timeout). Units of work run on fibers
 * (warren/fiber.h): while a statement runs, the loop goes on; the connection's lock keeps the
 * fibers that share a lane in turn, each unit of work whole.
 */
#ifndef WARREN_EXECUTOR_DBCONN_H
#define WARREN_EXECUTOR_DBCONN_H

#include <libpq-fe.h>
#include "warren/backoff.h"
#include "warren/common.h"
#include "warren/fiber.h"

typedef struct dbconn {
    const char *lane; /* for logs: "dispatch", "writes", "jobs", "api" */
    char *url;
    int connect_timeout_s;
    int statement_timeout_ms; /* 0: unbounded */
    bool prepare;             /* prepare statements once per connection (db_set_prepare) */
    PGconn *conn;             /* NULL while down */
    backoff_t backoff;
    int64_t next_try_ms;          /* no reconnect before this (monotonic) */
    bool down_logged;             /* "database unavailable" once per outage */
    uint64_t errors;              /* failed transactions, for the stats line */
    char last_error[ERRBUF_SIZE]; /* why the last failed unit of work failed */
    uint64_t reconnects;
    bool rebound;      /* the statement timeout changed: set it again before the next use */
    fiber_lock_t lock; /* one unit of work at a time */
} dbconn_t;

/* Copies url. Free with dbc_free(), which also closes the connection. */
int dbc_init(dbconn_t *d, const char *url, int connect_timeout_s) WARN_UNUSED;
void dbc_free(dbconn_t *d);
/* Bound every statement: the server's statement_timeout, and a client-side deadline a little
 * later (database.statement_timeout_ms); a connection already open takes it before its next
 * unit of work. */
void dbc_set_statement_timeout(dbconn_t *d, int timeout_ms);
/* Prepare each statement once per connection from the next connection on (needs a statement
 * timeout: only bounded statements are prepared). */
void dbc_set_prepare(dbconn_t *d, bool on);
/* The connection, reconnecting when allowed; NULL while the database is unavailable. */
PGconn *dbc_get(dbconn_t *d);

/* The caller saw the connection fail outside a unit of work (a socket it watches for
 * notifications): close it; dbc_get reconnects after the backoff. */
void dbc_lost(dbconn_t *d);

/* The work of one transaction: statements on db; 0 to commit, -1 (err filled) to roll back. */
typedef int (*dbc_work_fn)(PGconn *db, void *arg, char *err, size_t errlen);

typedef enum {
    DBC_OK = 0,
    DBC_UNAVAILABLE, /* no connection, it was lost, or a transient error (SQLSTATE class 40,
                      * 55, 57: deadlock, lock or statement timeout): retry later, same input */
    DBC_FAILED,      /* the statements failed on a live connection: the input may be at fault */
} dbc_result_t;

/* BEGIN, work, COMMIT. On failure rolls back, logs `what` with the error, and drops a lost
 * connection so the next call reconnects. Waits for the connection's lock first (another
 * fiber's unit of work): DBC_UNAVAILABLE when it does not come within the lane's bound. */
dbc_result_t dbc_transaction(dbconn_t *d, const char *what, dbc_work_fn work, void *arg);
/* The same for work that is one statement, without BEGIN/COMMIT (one round trip). */
dbc_result_t dbc_statement(dbconn_t *d, const char *what, dbc_work_fn work, void *arg);
/* One statement as a unit of work: dbc_query_fn runs sql with params and keeps the result in
 * res (cleared first: a unit of work may be run again), which the caller PQclear()s. */
typedef struct dbc_query_work {
    const char *sql;
    int nparams;
    const char *const *params;
    PGresult *res;
} dbc_query_work_t;
int dbc_query_fn(PGconn *db, void *arg, char *err, size_t errlen);
/* dbc_statement of sql with text params: its result in *res (the caller PQclear()s it; NULL
 * unless DBC_OK). */
dbc_result_t dbc_query(dbconn_t *d, const char *what, const char *sql, int nparams,
                       const char *const *params, PGresult **res);

/*
 * A pool of connections for work that may run side by side (the HTTP API): a fiber takes one
 * with dbc_pool_acquire, runs its units of work on it and gives it back. When every connection
 * is busy, at most max_waiting fibers wait for one, each until its deadline.
 */
typedef struct dbc_pool {
    dbconn_t *conns; /* owned, n of them */
    size_t n;
    size_t max_waiting;
    size_t waiting;
    fiber_cond_t freed; /* signalled when a connection is given back */
    uint64_t refused;   /* acquires refused: the queue was full or the wait too long */
} dbc_pool_t;

/* n connections to url, none opened yet. -1 when out of memory. Free with dbc_pool_free(). */
int dbc_pool_init(dbc_pool_t *p, const char *lane, size_t n, size_t max_waiting, const char *url,
                  int connect_timeout_s) WARN_UNUSED;
void dbc_pool_free(dbc_pool_t *p);
/* A connection for the calling fiber, waiting until deadline_ms for one to be free; its lock is
 * the caller's until dbc_pool_release. NULL when the queue is full or the deadline passed. */
dbconn_t *dbc_pool_acquire(dbc_pool_t *p, int64_t deadline_ms);
void dbc_pool_release(dbc_pool_t *p, dbconn_t *d);
/* Every connection's statement bound and preparing (dbc_set_statement_timeout, dbc_set_prepare). */
void dbc_pool_configure(dbc_pool_t *p, int statement_timeout_ms, bool prepare);
/* Connections open now, and units of work that failed on them. */
size_t dbc_pool_open(const dbc_pool_t *p);
uint64_t dbc_pool_errors(const dbc_pool_t *p);

/* An executor's lanes and the API's pools, as the parts that report on them see them (the
 * stats line, /readyz, /metrics): borrowed, never used for work. A NULL entry is none. */
#define DBC_LANES_MAX 3
#define DBC_POOLS_MAX 2
typedef struct dbc_lanes {
    const dbconn_t *lanes[DBC_LANES_MAX];   /* borrowed: dispatch, writes, jobs */
    const dbc_pool_t *pools[DBC_POOLS_MAX]; /* borrowed: the API's */
} dbc_lanes_t;

/* Failed units of work on every lane and pool. */
uint64_t dbc_lanes_errors(const dbc_lanes_t *l);
/* Every lane that was ever used holds a connection now (the pools connect on demand). */
bool dbc_lanes_up(const dbc_lanes_t *l);
/* Connections the lanes remade, in all. */
uint64_t dbc_lanes_reconnects(const dbc_lanes_t *l);

#endif
