/*
 * The database commands' side of PostgreSQL and their shared command-line chores: load the
 * configuration and connect, run one query reporting failures as "warren CMD: ...", print rows.
 */
#ifndef WARREN_CLI_DB_H
#define WARREN_CLI_DB_H

#include <stdio.h>
#include <libpq-fe.h>
#include "cli/cli.h"
#include "warren/config.h"

/* What a command does once connected; returns an exit code. */
typedef int (*cli_db_run_fn)(PGconn *db, const warren_config_t *cfg, const void *opts);

/*
 * The life of an operator command after its options were parsed (parsed: 1 for --help, -1
 * for a usage error already reported, 0 to run): print the help, or connect, run, clean up.
 */
int cli_db_command(const char *cmd, int parsed, void (*usage)(FILE *out), const char *config_path,
                   cli_db_run_fn run, const void *opts);

/* Run sql with text params (NULL entries are SQL NULL). The result, or NULL after printing
 * "warren CMD: <server message>" to stderr. The caller PQclear()s it. */
PGresult *cli_db_query(PGconn *db, const char *cmd, const char *sql, int nparams,
                       const char *const *params);

/* Field (row, column name) of res; NULL for SQL NULL, an unknown column or a missing row. */
const char *cli_db_field(const PGresult *res, int row, const char *column);

/*
 * Print every row of res as a table, headers[i] over column i. A column whose name ends in "_s"
 * holds seconds and prints as a duration ("4m05s"); NULL prints as "-". -1 when out of memory.
 */
int cli_db_print_table(const PGresult *res, const char *const *headers, FILE *out) WARN_UNUSED;

/*
 * What the listing commands print: with json, json_sql's single value (a JSON document built
 * by the server); else text_sql's rows as a table under headers. Returns an exit code.
 */
int cli_db_show(PGconn *db, const char *cmd, bool json, const char *json_sql, const char *text_sql,
                int nparams, const char *const *params, const char *const *headers);

#endif
