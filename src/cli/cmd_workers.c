/* `warren workers`: every known worker with its liveness, load and capabilities. */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "warren/queries.h"

static const char workers_usage_line[] = "warren workers [--json] [-c FILE]";

typedef struct workers_opts {
    const char *config;
    bool json;
} workers_opts_t;

static void workers_usage(FILE *out)
{
    fprintf(
        out,
        "usage: %s\n"
        "\n"
        "List the workers that announced themselves: id, status, live or stale, capacity,\n"
        "running executions, age of the last heartbeat and capabilities. A worker is live\n"
        "while its last heartbeat is younger than executor.heartbeat_stale_factor times its\n"
        "heartbeat interval, counted from when the executor could last hear heartbeats\n"
        "again after it could not (the rule the executor applies).\n"
        "\n"
        "  -j, --json         print a JSON array of the rows, with \"live\", \"state\" (live,\n"
        "                     stale, offline, stopping), \"heartbeat_age_s\" and \"in_flight\"\n"
        "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
        "  -h, --help         show this help\n"
        "\n"
        "With WARREN_API_URL set it asks the executor's HTTP API (WARREN_API_KEY: the key)\n"
        "instead of the database; --json prints the same array either way.\n"
        "\n"
        "Exit codes: 0 ok, 1 database error, 2 usage or configuration error.\n",
        workers_usage_line);
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int workers_parse(int argc, char **argv, workers_opts_t *o)
{
    const cli_option_t options[] = {{"json", 'j', .flag = &o->json}};
    const cli_spec_t spec = {"workers", workers_usage_line, options, CLI_COUNT(options), NULL};
    return cli_parse(&spec, argc, argv, &o->config, NULL);
}

/* Liveness is the scheduler's own rule (schema 007's warren_worker_live, by the database
 * clock); $1 is executor.heartbeat_stale_factor. A heartbeat committed after this statement's
 * now() would give a negative age: it is 0. Live means online and fresh (a worker that said
 * "stopping" or "offline" gets no new work however fresh its heartbeat). */
#define WORKERS_ROWS                                                                               \
    "SELECT w.*, greatest(extract(epoch FROM now() - last_heartbeat), 0) AS heartbeat_age_s,"      \
    " warren_worker_live(w, $1::integer) AS live "                                                 \
    "FROM workers w"

static const char workers_text_sql[] =
    "SELECT id, status, CASE WHEN live THEN 'live' WHEN status <> 'online' THEN '-'"
    "   ELSE 'stale' END, capacity, running,"
    " heartbeat_age_s, nullif(array_to_string(capabilities, ','), '') "
    "FROM (" WORKERS_ROWS ") r ORDER BY id";

static int workers_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    static const char *const head[] = {"ID",      "STATUS",        "LIVENESS",    "CAPACITY",
                                       "RUNNING", "HEARTBEAT AGE", "CAPABILITIES"};
    const workers_opts_t *o = opts;
    char factor[16];
    snprintf(factor, sizeof factor, "%d", cfg->executor.heartbeat_stale_factor);
    const char *params[] = {factor};
    return cli_db_show(db, "workers", o->json, q_workers, workers_text_sql, 1, params, head);
}

int cmd_workers(int argc, char **argv)
{
    workers_opts_t o = {0};
    int parsed = workers_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return cli_api_workers(o.json);
    return cli_db_command("workers", parsed, workers_usage, o.config, workers_run, &o);
}
