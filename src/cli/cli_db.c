/* Configuration, connection, queries and tables for the database commands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/cli_db.h"
#include "cli/cli_fmt.h"
#include "warren/db.h"
#include "warren/log.h"

/* Load the configuration and connect. EXIT_OK with both filled (the caller frees them),
 * else the exit code after reporting the problem, with nothing left to free. */
static int cli_db_start(const char *cmd, const char *config_path, warren_config_t *cfg, PGconn **db)
{
    *db = NULL;
    if (cli_load_config(config_path, cfg) != 0)
        return EXIT_USAGE;
    log_set_component("cli");
    char err[ERRBUF_SIZE] = "";
    *db = db_connect(cfg->database.url, cfg->database.connect_timeout_s, err, sizeof err);
    if (!*db) {
        fprintf(stderr, "warren %s: %s\n", cmd, err);
        cfg_free(cfg);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

int cli_db_command(const char *cmd, int parsed, void (*usage)(FILE *out), const char *config_path,
                   cli_db_run_fn run, const void *opts)
{
    int rc = cli_parsed_exit(parsed, usage);
    if (rc >= 0)
        return rc;
    warren_config_t cfg;
    PGconn *db;
    rc = cli_db_start(cmd, config_path, &cfg, &db);
    if (rc != EXIT_OK)
        return rc;
    rc = run(db, &cfg, opts);
    PQfinish(db);
    cfg_free(&cfg);
    return rc;
}

PGresult *cli_db_query(PGconn *db, const char *cmd, const char *sql, int nparams,
                       const char *const *params)
{
    char err[ERRBUF_SIZE] = "";
    PGresult *res = NULL;
    if (db_exec(db, sql, nparams, params, &res, err, sizeof err) != 0) {
        fprintf(stderr, "warren %s: %s\n", cmd, err);
        return NULL;
    }
    return res;
}

const char *cli_db_field(const PGresult *res, int row, const char *column)
{
    int col = PQfnumber(res, column);
    if (col < 0 || row >= PQntuples(res) || PQgetisnull(res, row, col))
        return NULL;
    return PQgetvalue(res, row, col);
}

static bool is_seconds_column(const PGresult *res, int col)
{
    const char *name = PQfname(res, col);
    size_t n = strlen(name);
    return n > 2 && !strcmp(name + n - 2, "_s");
}

/* Fill cells with row i of res; durations are written into spare. */
static void table_row(const PGresult *res, int i, const char **cells, char (*spare)[32])
{
    for (int c = 0; c < PQnfields(res); c++) {
        cells[c] = PQgetisnull(res, i, c) ? NULL : PQgetvalue(res, i, c);
        if (cells[c] && is_seconds_column(res, c)) {
            cli_fmt_duration(atof(cells[c]), spare[c], sizeof spare[c]);
            cells[c] = spare[c];
        }
    }
}

int cli_db_print_table(const PGresult *res, const char *const *headers, FILE *out)
{
    size_t ncols = (size_t)PQnfields(res);
    const char *cells[ncols];
    char spare[ncols][32];
    cli_table_t t;
    if (cli_table_init(&t, ncols, headers) != 0)
        return -1;
    for (int i = 0; i < PQntuples(res); i++) {
        table_row(res, i, cells, spare);
        if (cli_table_add(&t, cells) != 0) {
            cli_table_free(&t);
            return -1;
        }
    }
    cli_table_print(&t, out);
    cli_table_free(&t);
    return 0;
}

int cli_db_show(PGconn *db, const char *cmd, bool json, const char *json_sql, const char *text_sql,
                int nparams, const char *const *params, const char *const *headers)
{
    PGresult *res = cli_db_query(db, cmd, json ? json_sql : text_sql, nparams, params);
    if (!res)
        return EXIT_RUNTIME;
    int rc = EXIT_OK;
    if (json) {
        printf("%s\n", PQgetvalue(res, 0, 0));
    } else if (cli_db_print_table(res, headers, stdout) != 0) {
        fprintf(stderr, "warren %s: out of memory\n", cmd);
        rc = EXIT_RUNTIME;
    }
    PQclear(res);
    return rc;
}
