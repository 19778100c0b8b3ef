/* PostgreSQL connection and statement helpers with the project's 0/-1 + err contract. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/config.h"
#include "warren/db.h"
#include "warren/log.h"
#include "db/db_internal.h"

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

PGconn *db_connect(const char *url, int connect_timeout_s, char *err, size_t errlen)
{
    if (!url || !*url) {
        snprintf(err, errlen, "no database URL configured (database.url)");
        return NULL;
    }
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", connect_timeout_s > 0 ? connect_timeout_s : 0);
    /* Later entries override what the URL says; fallback_application_name does not. */
    const char *keys[] = {"dbname", "fallback_application_name", "connect_timeout",
                          "client_encoding", NULL};
    const char *vals[] = {url, "warren", timeout, "UTF8", NULL};
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
    return db;
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

int db_exec(PGconn *db, const char *sql, int nparams, const char *const *params, PGresult **out,
            char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    PGresult *res = PQexecParams(db, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
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
    return !db || PQstatus(db) == CONNECTION_BAD;
}
