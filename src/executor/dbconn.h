/*
 * The executor's one PostgreSQL connection: connect lazily, reconnect with backoff after a
 * loss, and run a unit of work inside BEGIN/COMMIT. Every statement goes through db_exec,
 * bounded by the server's statement_timeout and by a client-side deadline a little later
 * (dbc_set_statement_timeout), so the loop never waits long for a database that vanished.
 */
#ifndef WARREN_EXECUTOR_DBCONN_H
#define WARREN_EXECUTOR_DBCONN_H

#include <libpq-fe.h>
#include "warren/backoff.h"
#include "warren/common.h"

typedef struct dbconn {
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
} dbconn_t;

/* Copies url. Free with dbc_free(), which also closes the connection. */
int dbc_init(dbconn_t *d, const char *url, int connect_timeout_s) WARN_UNUSED;
void dbc_free(dbconn_t *d);
/* Bound every statement from the next connection on: the server's statement_timeout, and a
 * client-side deadline a little later (database.statement_timeout_ms). */
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
 * connection so the next call reconnects. */
dbc_result_t dbc_transaction(dbconn_t *d, const char *what, dbc_work_fn work, void *arg);
/* The same for work that is one statement, without BEGIN/COMMIT (one round trip). */
dbc_result_t dbc_statement(dbconn_t *d, const char *what, dbc_work_fn work, void *arg);

#endif
