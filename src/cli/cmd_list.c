/* `warren list`: the newest executions, optionally of one status, as a table or JSON. */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"
#include "cli/cli_db.h"
#include "cli/cli_api.h"
#include "cli/cli_fmt.h"
#include "warren/queries.h"
#include "warren/utf8.h"

#define LIST_DEFAULT_LIMIT "20"
#define LIST_MAX_LIMIT 100000

static const char list_usage_line[] = "warren list [--status S] [--limit N] [--json] [-c FILE]";

typedef struct list_opts {
    const char *config;
    const char *status; /* NULL: every status */
    const char *limit;
    bool json;
} list_opts_t;

static void list_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "List executions, newest first: id, action, status, worker (or the pinned worker\n"
            "while none took it), attempt, age since submission, run time, and the error or\n"
            "why it still waits.\n"
            "\n"
            "  -s, --status S     only executions in status S, one of:\n"
            "                     %s\n"
            "                     (final: %s)\n"
            "  -n, --limit N      at most N executions, 1-%d (default %s)\n"
            "  -j, --json         print a JSON array of the rows\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "With WARREN_API_URL set it asks the executor's HTTP API (WARREN_API_KEY: the key)\n"
            "instead of the database; --json prints the same array either way.\n"
            "\n"
            "Exit codes: 0 ok, 1 database error, 2 usage or configuration error.\n",
            list_usage_line, cli_status_list(), cli_status_final_list(), LIST_MAX_LIMIT,
            LIST_DEFAULT_LIMIT);
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int list_parse(int argc, char **argv, list_opts_t *o)
{
    const cli_option_t options[] = {
        {"status", 's', .value = &o->status},
        {"limit", 'n', .value = &o->limit},
        {"json", 'j', .flag = &o->json},
    };
    const cli_spec_t spec = {"list", list_usage_line, options, CLI_COUNT(options), NULL};
    int64_t n;
    o->limit = LIST_DEFAULT_LIMIT;
    int rc = cli_parse(&spec, argc, argv, &o->config, NULL);
    if (rc != 0)
        return rc;
    if (o->status && !cli_status_known(o->status))
        cli_usage_error("list", list_usage_line, "unknown status '%.*s'; statuses: %s",
                        utf8_prec(o->status, 40), o->status, cli_status_list());
    else if (cli_parse_int64(o->limit, 1, LIST_MAX_LIMIT, &n) != 0)
        cli_usage_error("list", list_usage_line, "--limit wants a whole number 1-%d, not '%s'",
                        LIST_MAX_LIMIT, o->limit);
    else
        return 0;
    return -1;
}

/* Both shapes select the same rows: ($1 IS NULL OR status = $1) newest first by id, which the
 * planner serves from the primary key or executions_status_id_idx backwards (as the API). */
#define LIST_ROWS                                                                                  \
    "SELECT * FROM executions WHERE ($1::text IS NULL OR status = $1) "                            \
    "ORDER BY id DESC LIMIT $2::integer"

static const char list_text_sql[] =
    "SELECT id, action_ref, status, coalesce(worker, 'pinned:' || pinned_worker), attempt,"
    " extract(epoch FROM now() - created_at) AS age_s,"
    " extract(epoch FROM coalesce(ended_at, now()) - started_at) AS run_s,"
    /* why it failed, or why it still waits (wait_reason: a column migration 003 adds) */
    " left(coalesce(error, to_jsonb(e) ->> 'wait_reason'), 80) "
    "FROM (" LIST_ROWS ") e";

static int list_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    static const char *const head[] = {"ID",      "ACTION", "STATUS", "WORKER",
                                       "ATTEMPT", "AGE",    "RUN",    "ERROR OR WAIT REASON"};
    const list_opts_t *o = opts;
    if (o->json) { /* the API's statement: newest first by id, the same document */
        const char *params[] = {o->status, NULL, NULL, NULL, NULL, o->limit};
        return cli_db_show(db, "list", true, q_execution_list, NULL, 6, params, head);
    }
    const char *params[] = {o->status, o->limit};
    return cli_db_show(db, "list", false, NULL, list_text_sql, 2, params, head);
}

int cmd_list(int argc, char **argv)
{
    list_opts_t o = {0};
    int parsed = list_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return cli_api_list(o.status, o.limit, o.json);
    return cli_db_command("list", parsed, list_usage, o.config, list_run, &o);
}
