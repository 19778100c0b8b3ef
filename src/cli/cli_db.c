/* Configuration, connection, queries and usage errors for the operator commands. */
#include <getopt.h>
#include <stdarg.h>
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
    if (parsed > 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (parsed < 0)
        return EXIT_USAGE;
    warren_config_t cfg;
    PGconn *db;
    int rc = cli_db_start(cmd, config_path, &cfg, &db);
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

int cli_parse_read_opts(const char *cmd, const char *usage, int argc, char **argv,
                        const char **config, bool *json)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":jc:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'j': *json = true; break;
        case 'c': *config = optarg; break;
        case 'h': return 1;
        default: cli_bad_option(cmd, usage, ch, argv); return -1;
        }
    }
    return 0;
}

int cli_parse_id_opts(const char *cmd, const char *usage, int argc, char **argv,
                      const char **config, bool *json, const char **id)
{
    int rc = cli_parse_read_opts(cmd, usage, argc, argv, config, json);
    if (rc != 0)
        return rc;
    int64_t v;
    if (optind != argc - 1 || cli_parse_int64(argv[optind], 1, INT64_MAX, &v) != 0) {
        cli_usage_error(cmd, usage,
                        optind == argc      ? "ID missing"
                        : optind < argc - 1 ? "one ID only"
                                            : "an execution id is a positive whole number");
        return -1;
    }
    *id = argv[optind];
    return 0;
}

int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "warren %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s (see --help)\n", usage);
    return EXIT_USAGE;
}

int cli_bad_option(const char *cmd, const char *usage, int ch, char **argv)
{
    if (ch == ':')
        return cli_usage_error(cmd, usage, "option '%s' needs a value", argv[optind - 1]);
    return cli_usage_error(cmd, usage, "unknown option '%s'", argv[optind - 1]);
}
