/* PostgreSQL connection and statement helpers with the project's 0/-1 + err contract. */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/config.h"
#include "warren/db.h"
#include "warren/fiber.h"
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
/* A statement prepared on the connection (db_set_prepare): its text and server-side name. */
typedef struct db_prepared {
    uint64_t hash;
    char *sql;
    int nparams;
    unsigned id; /* the name is "warren_<id>" */
} db_prepared_t;

/* Statements prepared per connection at most: the executor's hot statements are fewer; text
 * built at run time past this runs unnamed, as every statement did before. */
#define DB_PREPARED_MAX 96

typedef struct db_state {
    int timeout_ms; /* 0: statements wait as long as the server takes */
    bool broken;    /* a statement ran past timeout_ms: the connection cannot be trusted */
    char sqlstate[6];
    bool prepare; /* db_set_prepare: statements with a deadline are prepared once, then reused */
    db_prepared_t prepared[DB_PREPARED_MAX];
    size_t n_prepared;
    unsigned next_id;
} db_state_t;

static void forget_prepared(db_state_t *st)
{
    for (size_t i = 0; i < st->n_prepared; i++)
        free(st->prepared[i].sql);
    st->n_prepared = 0;
}

static int db_event(PGEventId id, void *info, void *arg)
{
    (void)arg;
    if (id == PGEVT_CONNDESTROY) {
        PGEventConnDestroy *e = info;
        db_state_t *st = PQinstanceData(e->conn, db_event);
        if (st)
            forget_prepared(st);
        free(st);
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

/* On a fiber, PQconnectdbParams without its wait: libpq's steps, each socket wait a fiber's,
 * within connect_timeout_s (0: none). Resolving a host name still blocks (libpq does it before
 * the first step); URLs with an address do not. */
static PGconn *connect_polled(const char *const *keys, const char *const *vals, int timeout_s,
                              bool *timed_out)
{
    PGconn *db = PQconnectStartParams(keys, vals, 1);
    if (!db || PQstatus(db) == CONNECTION_BAD)
        return db;
    int64_t deadline = timeout_s > 0 ? now_mono_ms() + (int64_t)timeout_s * 1000 : INT64_MAX;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int w = fiber_wait_fd(PQsocket(db), st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
                              deadline);
        if (w <= 0) {
            *timed_out = true;
            return db;
        }
        st = PQconnectPoll(db);
    }
    return db;
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
    bool timed_out = false;
    PGconn *db = fiber_active() ? connect_polled(keys, vals, connect_timeout_s, &timed_out)
                                : PQconnectdbParams(keys, vals, 1);
    if (db && timed_out) {
        snprintf(err, errlen,
                 "cannot connect to PostgreSQL: no answer within %d s "
                 "(database.connect_timeout_s)",
                 connect_timeout_s);
        PQfinish(db);
        return NULL;
    }
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

void db_set_prepare(PGconn *db, bool on)
{
    db_state_t *st = state_of(db);
    if (st)
        st->prepare = on;
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

/* Wait until the socket is ready for `events` or the deadline passes (0: it passed). On a
 * fiber the loop runs meanwhile (warren/fiber.h). */
static int wait_socket(PGconn *db, short events, int64_t deadline_ms)
{
    return fiber_wait_fd(PQsocket(db), events, deadline_ms);
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

/* FNV-1a: the cache is looked up by text (a buffer may hold different statements in turn). */
static uint64_t sql_hash(const char *sql)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)sql; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static db_prepared_t *find_prepared(db_state_t *st, const char *sql, int nparams, uint64_t h)
{
    for (size_t i = 0; i < st->n_prepared; i++)
        if (st->prepared[i].hash == h && st->prepared[i].nparams == nparams &&
            !strcmp(st->prepared[i].sql, sql))
            return &st->prepared[i];
    return NULL;
}

static void prepared_name(const db_prepared_t *p, char *name, size_t len)
{
    snprintf(name, len, "warren_%u", p->id);
}

/* Flush what was sent, then wait for the first result; returns like wait_result. */
static int flush_and_wait(PGconn *db, int64_t deadline_ms)
{
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

/* Send the whole query (prepared as name when name is not NULL), then wait for its first
 * result; returns like wait_result. */
static int send_query(PGconn *db, const char *name, const char *sql, int nparams,
                      const char *const *params, int64_t deadline_ms)
{
    if (PQsetnonblocking(db, 1) != 0)
        return -1;
    int sent = name ? PQsendQueryPrepared(db, name, nparams, params, NULL, NULL, 0)
                    : PQsendQueryParams(db, sql, nparams, NULL, params, NULL, NULL, 0);
    return sent ? flush_and_wait(db, deadline_ms) : -1;
}

/* Read every result of what was sent: the first error, else the last result, in *last.
 * rc is what sending returned; returns like wait_result. */
static int collect(PGconn *db, int rc, int64_t deadline_ms, PGresult **last)
{
    PGresult *r;
    while (rc == 1 && (r = PQgetResult(db)) != NULL) {
        /* Keep the first error, else the last result (what PQexecParams returns). */
        if (*last && PQresultStatus(*last) == PGRES_FATAL_ERROR) {
            PQclear(r);
        } else {
            PQclear(*last);
            *last = r;
        }
        rc = wait_result(db, deadline_ms);
    }
    return rc;
}

/*
 * The server-side name of sql, preparing it first when it is new (one more round trip, once
 * per connection). NULL: run it unnamed (preparing is off, or the cache is full). A failed
 * prepare leaves its error in *last and sets *rc like wait_result.
 */
static const char *use_prepared(PGconn *db, db_state_t *st, const char *sql, int nparams,
                                int64_t deadline_ms, char *name, size_t len, PGresult **last,
                                int *rc)
{
    *rc = 1;
    if (!st->prepare)
        return NULL;
    uint64_t h = sql_hash(sql);
    db_prepared_t *p = find_prepared(st, sql, nparams, h);
    if (p) {
        prepared_name(p, name, len);
        return name;
    }
    if (st->n_prepared == DB_PREPARED_MAX)
        return NULL;
    char *copy = strdup(sql);
    if (!copy)
        return NULL;
    db_prepared_t fresh = {.hash = h, .sql = copy, .nparams = nparams, .id = st->next_id++};
    prepared_name(&fresh, name, len);
    if (PQsetnonblocking(db, 1) != 0 || !PQsendPrepare(db, name, sql, nparams, NULL)) {
        free(copy);
        *rc = -1;
        return NULL;
    }
    *rc = collect(db, flush_and_wait(db, deadline_ms), deadline_ms, last);
    if (*rc != 1 || PQresultStatus(*last) != PGRES_COMMAND_OK) {
        free(copy);
        return NULL; /* the caller reports *last (the server's error) or *rc */
    }
    PQclear(*last);
    *last = NULL;
    st->prepared[st->n_prepared++] = fresh;
    return name;
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
    int64_t deadline = st->timeout_ms > 0 ? now_mono_ms() + st->timeout_ms : INT64_MAX;
    PGresult *last = NULL;
    char name[32];
    int rc;
    const char *prepared = use_prepared(db, st, sql, nparams, deadline, name, sizeof name, &last,
                                        &rc);
    if (rc == 1 && !last)
        rc = collect(db, send_query(db, prepared, sql, nparams, params, deadline), deadline, &last);
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
    if (state && (state->timeout_ms > 0 || fiber_active())) {
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
        /* A prepared statement the server no longer has (26000: a pooler moved the session),
         * or whose plan no longer fits after a schema change (0A000, "cached plan must not
         * change result type"): prepare everything again from the next statement on. */
        if (state && code && (!strcmp(code, "26000") || !strcmp(code, "0A000")))
            forget_prepared(state);
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
