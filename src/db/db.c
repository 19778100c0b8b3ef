/* PostgreSQL connection and statement helpers with the project's 0/-1 + err contract. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/config.h"
#include "warren/db.h"
#include "warren/log.h"
#include <libpq-events.h>
#include "db/db_internal.h"

/* Unacknowledged data older than this closes a connection (the kernel's retransmissions would
 * otherwise go on for about 15 minutes). */
#define DB_TCP_USER_TIMEOUT_MS_TEXT "30000"

/* Server notices (e.g. "relation already exists, skipping") go to the log, not stderr. */
static void db_notice(void *arg, const PGresult *res)
{
    (void)arg;
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    bool warning = sev && !strcmp(sev, "WARNING");
    log_kv(warning ? LOG_WARN : LOG_DEBUG, "postgresql notice", "severity", sev ? sev : "",
           "detail", msg ? msg : "", NULL);
}

/* libpq messages span lines ("FATAL:  ...\n\tThis probably means..."); the err contract
 * wants one line, so whitespace runs become one space. */
static void copy_message(char *err, size_t errlen, const char *prefix, const char *msg)
{
    if (!msg || !*msg)
        msg = "unknown error";
    size_t o = (size_t)snprintf(err, errlen, "%s", prefix);
    bool space = false;
    for (; *msg && o + 1 < errlen; msg++) {
        if (*msg == ' ' || *msg == '\n' || *msg == '\t' || *msg == '\r') {
            space = true;
            continue;
        }
        if (space && o > 0 && o + 2 < errlen)
            err[o++] = ' ';
        space = false;
        err[o++] = *msg;
    }
    err[o < errlen ? o : errlen - 1] = '\0';
}

/*
 * What db.c keeps with each connection (libpq instance data, freed with the connection): the
 * bound on every statement, whether a statement ran past it, and the SQLSTATE of the last
 * failure.
 */
typedef struct db_state {
    int timeout_ms; /* 0: statements wait as long as the server takes */
    bool broken;    /* a statement ran past timeout_ms: the connection cannot be trusted */
    char sqlstate[6];
} db_state_t;

static int db_event(PGEventId id, void *info, void *arg)
{
    (void)arg;
    if (id == PGEVT_CONNDESTROY) {
        PGEventConnDestroy *e = info;
        free(PQinstanceData(e->conn, db_event));
    }
    return 1;
}

static db_state_t *state_of(const PGconn *db)
{
    return db ? PQinstanceData(db, db_event) : NULL;
}

static int attach_state(PGconn *db)
{
    db_state_t *st = calloc(1, sizeof *st);
    if (!st || !PQregisterEventProc(db, db_event, "warren", NULL) ||
        !PQsetInstanceData(db, db_event, st)) {
        free(st);
        return -1;
    }
    return 0;
}

PGconn *db_connect(const char *url, int connect_timeout_s, char *err, size_t errlen)
{
    if (!url || !*url) {
        snprintf(err, errlen, "no database URL configured (database.url)");
        return NULL;
    }
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", connect_timeout_s > 0 ? connect_timeout_s : 0);
    /* Entries after dbname override what the URL says; those before it (TCP keepalives and
     * tcp_user_timeout, so that a peer that vanished without closing the connection is noticed
     * by the kernel within about half a minute) are defaults the URL may change. */
    const char *keys[] = {"keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          "dbname",
                          "fallback_application_name",
                          "connect_timeout",
                          "client_encoding",
                          NULL};
    const char *vals[] = {"1", "10",     "5",     "3",    DB_TCP_USER_TIMEOUT_MS_TEXT,
                          url, "warren", timeout, "UTF8", NULL};
    PGconn *db = PQconnectdbParams(keys, vals, 1);
    if (!db) {
        snprintf(err, errlen, "out of memory connecting to PostgreSQL");
        return NULL;
    }
    if (PQstatus(db) != CONNECTION_OK) {
        /* libpq quotes the piece of a malformed URL it stumbled on, which may be the password. */
        char *safe = cfg_mask_message(PQerrorMessage(db), url);
        copy_message(err, errlen, "cannot connect to PostgreSQL: ",
                     safe ? safe : "(libpq's message withheld: out of memory)");
        free(safe);
        PQfinish(db);
        return NULL;
    }
    PQsetNoticeReceiver(db, db_notice, NULL);
    if (attach_state(db) != 0) {
        snprintf(err, errlen, "out of memory connecting to PostgreSQL");
        PQfinish(db);
        return NULL;
    }
    return db;
}

void db_set_timeout(PGconn *db, int timeout_ms)
{
    db_state_t *st = state_of(db);
    if (st)
        st->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

const char *db_last_sqlstate(const PGconn *db)
{
    const db_state_t *st = state_of(db);
    return st ? st->sqlstate : "";
}

bool db_sqlstate_transient(const char *sqlstate)
{
    /* 40: serialization failure, deadlock; 55: lock not available, object in use; 57:
     * statement cancelled (statement_timeout), server shutting down. */
    return sqlstate && (!strncmp(sqlstate, "40", 2) || !strncmp(sqlstate, "55", 2) ||
                        !strncmp(sqlstate, "57", 2));
}

void db_describe_error(PGconn *db, const PGresult *res, char *err, size_t errlen)
{
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg) {
        copy_message(err, errlen, "", PQerrorMessage(db));
        return;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
    char line[ERRBUF_SIZE];
    snprintf(line, sizeof line, "%s (SQLSTATE %s)%s%s", msg, state ? state : "?",
             detail ? ": " : "", detail ? detail : "");
    copy_message(err, errlen, "", line);
}

/* Wait until the socket is ready for `events` or the deadline passes (0: it passed). */
static int wait_socket(PGconn *db, short events, int64_t deadline_ms)
{
    struct pollfd p = {.fd = PQsocket(db), .events = events};
    for (;;) {
        int64_t left = deadline_ms - now_mono_ms();
        if (left <= 0)
            return 0;
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -1 : n;
    }
}

/* Read until libpq has a complete result. 1 when it has, 0 when the deadline passed, -1 when
 * the connection failed (PQerrorMessage says why). */
static int wait_result(PGconn *db, int64_t deadline_ms)
{
    while (PQisBusy(db)) {
        int w = wait_socket(db, POLLIN, deadline_ms);
        if (w <= 0)
            return w;
        if (!PQconsumeInput(db))
            return -1;
    }
    return 1;
}

/* Send the whole query, then wait for its first result; returns like wait_result. */
static int send_query(PGconn *db, const char *sql, int nparams, const char *const *params,
                      int64_t deadline_ms)
{
    if (PQsetnonblocking(db, 1) != 0 ||
        !PQsendQueryParams(db, sql, nparams, NULL, params, NULL, NULL, 0))
        return -1;
    int f;
    while ((f = PQflush(db)) == 1) {
        int w = wait_socket(db, POLLIN | POLLOUT, deadline_ms);
        if (w <= 0)
            return w;
        if (!PQconsumeInput(db))
            return -1;
    }
    return f < 0 ? -1 : wait_result(db, deadline_ms);
}

/*
 * PQexecParams with a deadline: a server that stops answering without closing the connection
 * (failover, partition, a stopped process) would otherwise hold the caller for as long as the
 * kernel keeps the connection. On timeout the connection is marked broken; the caller drops
 * it (db_connection_lost). Returns the last result like PQexecParams, or NULL.
 */
static PGresult *exec_bounded(PGconn *db, db_state_t *st, const char *sql, int nparams,
                              const char *const *params, char *err, size_t errlen)
{
    int64_t deadline = now_mono_ms() + st->timeout_ms;
    PGresult *last = NULL, *r;
    int rc = send_query(db, sql, nparams, params, deadline);
    while (rc == 1 && (r = PQgetResult(db)) != NULL) {
        /* Keep the first error, else the last result (what PQexecParams returns). */
        if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
            PQclear(r);
        } else {
            PQclear(last);
            last = r;
        }
        rc = wait_result(db, deadline);
    }
    if (rc == 0) {
        st->broken = true;
        snprintf(err, errlen,
                 "PostgreSQL did not answer within %d ms (database.statement_timeout_ms); "
                 "dropping the connection",
                 st->timeout_ms);
    } else if (rc < 0) {
        copy_message(err, errlen, "", PQerrorMessage(db));
    }
    if (rc != 1) {
        PQclear(last);
        return NULL;
    }
    return last;
}

int db_exec(PGconn *db, const char *sql, int nparams, const char *const *params, PGresult **out,
            char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    db_state_t *state = state_of(db);
    if (state)
        state->sqlstate[0] = '\0';
    if (state && state->broken) {
        snprintf(err, errlen, "the connection timed out before; it must be dropped");
        return -1;
    }
    PGresult *res;
    if (state && state->timeout_ms > 0) {
        err[0] = '\0';
        res = exec_bounded(db, state, sql, nparams, params, err, errlen);
        if (!res)
            return -1; /* err says why */
    } else {
        res = PQexecParams(db, sql, nparams, NULL, params, NULL, NULL, 0);
    }
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (state && code)
            snprintf(state->sqlstate, sizeof state->sqlstate, "%s", code);
        db_describe_error(db, res, err, errlen);
        PQclear(res);
        return -1;
    }
    if (out)
        *out = res;
    else
        PQclear(res);
    return 0;
}

bool db_connection_lost(PGconn *db)
{
    /* A terminated backend or a dead socket leaves libpq in CONNECTION_BAD once the
     * failing call returns; nothing short of a reconnect helps then. */
    const db_state_t *st = state_of(db);
    return !db || PQstatus(db) == CONNECTION_BAD || (st && st->broken);
}
