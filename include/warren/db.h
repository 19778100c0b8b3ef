/*
 * PostgreSQL access: connect with a timeout, run parameterised statements, apply the numbered
 * migrations in schema/. Only the executor and the CLI's migrate command hold credentials.
 */
#ifndef WARREN_DB_H
#define WARREN_DB_H

#include <stdio.h>
#include <libpq-fe.h>
#include "warren/common.h"

/* Connect to url with connect_timeout_s, TCP keepalives and tcp_user_timeout (the URL may
 * change those). NULL on failure (reason in err). Caller PQfinish()es. */
PGconn *db_connect(const char *url, int connect_timeout_s, char *err, size_t errlen);
/* Bound every later db_exec on db to timeout_ms (0: no bound, the default). A statement that
 * gets no answer in time fails, and the connection is then lost (db_connection_lost): a server
 * that vanished without closing the connection cannot hold the caller. */
void db_set_timeout(PGconn *db, int timeout_ms);
/* Prepare each statement db_exec runs on db under a deadline (db_set_timeout) once, on first
 * use, and run it by name from then on: no parse and plan per call (database.
 * prepared_statements). Keyed by the text; forgotten when the server loses them. */
void db_set_prepare(PGconn *db, bool on);
/* Run sql with text params; the result must be COMMAND_OK or TUPLES_OK or -1 is returned
 * with the server message in err. *out (may be NULL) gets the result, caller PQclear()s. */
int db_exec(PGconn *db, const char *sql, int nparams, const char *const *params, PGresult **out,
            char *err, size_t errlen) WARN_UNUSED;
/* True when the last failure looks like a lost connection (retry after reconnect), also after
 * a statement ran past db_set_timeout's bound. */
bool db_connection_lost(PGconn *db);
/* The SQLSTATE of db_exec's last failure on db ("" when it had none, or succeeded). */
const char *db_last_sqlstate(const PGconn *db);
/* True for SQLSTATE classes that say "try again" rather than "this input is wrong": 40
 * (serialization failure, deadlock), 55 (lock not available), 57 (cancelled, shutting down). */
bool db_sqlstate_transient(const char *sqlstate);

/* Apply pending migrations from dir (NULL: db_schema_dir()) under an advisory lock.
 * Each file runs in its own transaction together with its row in warren_migrations.
 * Then, when a migration was applied after them or one of them changed, every definition file
 * of dir/functions again, all in one transaction recorded in warren_definitions; *definitions
 * (may be NULL) says how many. Prints what it applied to out (NULL: to the log). Returns the
 * number of migrations applied, -1 on failure: err names the file, line and statement; that
 * file's changes (or all the definitions') are rolled back, files applied before it stay. An
 * applied migration whose checksum changed (and is not in superseded.sha256) is a failure. */
int db_migrate(PGconn *db, const char *dir, FILE *out, int *definitions, char *err,
               size_t errlen) WARN_UNUSED;
/* The number of migrations and definition files in dir (NULL: db_schema_dir()) not applied
 * yet. Changes and prints nothing. -1 on failure or when an applied file has changed since
 * (named in err). */
int db_migrate_pending(PGconn *db, const char *dir, char *err, size_t errlen) WARN_UNUSED;
/* db_migrate_pending, and print each migration in dir as applied (with its time) or pending,
 * and applied ones without a file, to out. */
int db_migrate_status(PGconn *db, const char *dir, FILE *out, char *err, size_t errlen) WARN_UNUSED;
/* Locate the schema directory: $WARREN_SCHEMA_DIR, the source tree, or the install path. */
const char *db_schema_dir(void);

#endif
