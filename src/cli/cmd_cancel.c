/* `warren cancel ID`: stop an execution, through the API or on the database URL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "cli/cli_fmt.h"
#include "warren/queries.h"

static const char cancel_usage_line[] = "warren cancel ID [--json] [-c FILE]";

typedef struct cancel_opts {
    const char *config;
    const char *id;
    bool json;
} cancel_opts_t;

static void cancel_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Cancel execution ID. A requested or scheduled one is cancelled at once; a running\n"
            "one becomes canceling and its worker is told to stop the handler (its process\n"
            "group is killed), then it reports cancelled. A cancelled execution is never run\n"
            "again. Prints the new status (the row with --json).\n"
            "\n"
            "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY: an\n"
            "operate key, whose name is recorded as cancelled_by). On the database URL\n"
            "cancelled_by is cli:<your user name>, and a running execution's worker is told by\n"
            "the executor's monitor within executor.monitor_interval_s or two.\n"
            "\n"
            "  -j, --json         print the execution row as JSON\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit codes: 0 cancelled or canceling, 1 no such execution, already ended, or a\n"
            "database or API error, 2 usage or configuration error.\n",
            cancel_usage_line);
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int cancel_parse(int argc, char **argv, cancel_opts_t *o)
{
    return cli_parse_id("cancel", cancel_usage_line, argc, argv, &o->config, &o->json, &o->id);
}

/* The API's statement (warren/queries.h): the same compare-and-swap, the same answers. */
static int cancel_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    (void)cfg;
    const cancel_opts_t *o = opts;
    char who[300];
    cli_operator(who, sizeof who);
    const char *params[] = {o->id, who};
    PGresult *res = cli_db_query(db, "cancel", q_cancel, 2, params);
    if (!res)
        return EXIT_RUNTIME;
    int rc = EXIT_OK;
    const char *before = cli_db_field(res, 0, "before"), *after = cli_db_field(res, 0, "after");
    if (PQntuples(res) == 0) {
        fprintf(stderr, "warren cancel: no execution %s\n", o->id);
        rc = EXIT_RUNTIME;
    } else if (!strcmp(before, after) && strcmp(before, "canceling")) {
        fprintf(stderr, "warren cancel: execution %s is %s: %s\n", o->id, before,
                cli_status_terminal(before) ? "it has ended" : "try again in a moment");
        rc = EXIT_RUNTIME;
    } else if (o->json) {
        printf("%s\n", cli_db_field(res, 0, "row"));
    } else {
        printf("execution %s: %s\n", o->id, after);
    }
    PQclear(res);
    return rc;
}

int cmd_cancel(int argc, char **argv)
{
    cancel_opts_t o = {0};
    int parsed = cancel_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return cli_api_cancel(o.id, o.json);
    return cli_db_command("cancel", parsed, cancel_usage, o.config, cancel_run, &o);
}
