/* `warren retry ID`: a manual retry, through the API or on the database URL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "warren/queries.h"

static const char retry_usage_line[] = "warren retry ID [--json] [-c FILE]";

typedef struct retry_opts {
    const char *config;
    const char *id;
    bool json;
} retry_opts_t;

static void retry_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Retry execution ID by hand: a failed, timed out or abandoned execution is requested\n"
            "again at once and goes out as its next attempt. A manual attempt does not use up\n"
            "the retry policy (docs/retries.md): it is counted apart (manual_retries). A running,\n"
            "completed, cancelled or not yet ended execution is refused, saying why. Two retries\n"
            "at once make one attempt. Prints the new status (the row with --json).\n"
            "\n"
            "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY: an\n"
            "operate key).\n"
            "\n"
            "  -j, --json         print the execution row as JSON\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit codes: 0 retried, 1 no such execution, refused, or a database or API error,\n"
            "2 usage or configuration error.\n",
            retry_usage_line);
}

static int retry_parse(int argc, char **argv, retry_opts_t *o)
{
    return cli_parse_id("retry", retry_usage_line, argc, argv, &o->config, &o->json, &o->id);
}

/* The API's statement (warren/queries.h): the same compare-and-swap, the same refusals. */
static int retry_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    (void)cfg;
    const retry_opts_t *o = opts;
    const char *params[] = {o->id};
    PGresult *res = cli_db_query(db, "retry", q_retry, 1, params);
    if (!res)
        return EXIT_RUNTIME;
    int rc = EXIT_OK;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "warren retry: no execution %s\n", o->id);
        rc = EXIT_RUNTIME;
    } else if (!strcmp(cli_db_field(res, 0, "before"), cli_db_field(res, 0, "after"))) {
        const char *before = cli_db_field(res, 0, "before"), *why = retry_refusal(before);
        fprintf(stderr, "warren retry: execution %s is %s: %s\n", o->id, before,
                why ? why : "try again in a moment");
        rc = EXIT_RUNTIME;
    } else if (o->json) {
        printf("%s\n", cli_db_field(res, 0, "row"));
    } else {
        printf("execution %s: %s (manual retry after attempt %s)\n", o->id,
               cli_db_field(res, 0, "after"), cli_db_field(res, 0, "attempt"));
    }
    PQclear(res);
    return rc;
}

int cmd_retry(int argc, char **argv)
{
    retry_opts_t o = {0};
    int parsed = retry_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return cli_api_retry(o.id, o.json);
    return cli_db_command("retry", parsed, retry_usage, o.config, retry_run, &o);
}
