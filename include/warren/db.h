/*
 * PostgreSQL access: connect with a timeout, run parameterised statements, apply the numbered
 * migrations in schema/. Only the executor and the CLI's migrate command hold credentials.
 */
#ifndef WARREN_DB_H
#define WARREN_DB_H

#include <stdio.h>
#include <libpq-fe.h>
#include "warren/common.h"

/* Connect to url with connect_timeout_s. NULL on failure (reason in err). Caller PQfinish()es. */
PGconn *db_connect(const char *url, int connect_timeout_s, char *err, size_t errlen);
/* Run sql with text params; the result must be COMMAND_OK or TUPLES_OK or -1 is returned
 * with the server message in err. *out (may be NULL) gets the result, caller PQclear()s. */
int db_exec(PGconn *db, const char *sql, int nparams, const char *const *params,
            PGresult **out, char *err, size_t errlen) WARN_UNUSED;
/* True when the last failure looks like a lost connection (retry after reconnect). */
bool db_connection_lost(PGconn *db);

/* Apply pending migrations from dir (NULL: the source tree's or installed schema/).
 * Each file runs in its own transaction and is recorded in warren_migrations.
 * Prints what it applied to out. Returns the number applied, -1 on failure (file and
 * statement named in err, the database left as it was). */
int db_migrate(PGconn *db, const char *dir, FILE *out, char *err, size_t errlen);
/* Locate the schema directory: $WARREN_SCHEMA_DIR, the source tree, or the install path. */
const char *db_schema_dir(void);

#endif
