/* `warren staleness`: every non-terminal execution with its time in state, threshold and
 * health (docs/dead-letters.md, "Staleness"), through the API or on the database URL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "cli/cli_fmt.h"
#include "warren/dlq.h"

static const char staleness_usage_line[] =
    "warren staleness [--health H] [--limit N] [--json] [-c FILE]";

typedef struct staleness_opts {
    const char *config, *health, *limit;
    bool json;
} staleness_opts_t;

static void staleness_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Every requested, scheduled and running execution, oldest first: its time in its\n"
            "status, the staleness threshold that applies (staleness.*), and its health:\n"
            "healthy, warning (past staleness.warning_pct of it) or stale (the detector ends it\n"
            "on its next round).\n"
            "\n"
            "  --health H         only executions of health H\n"
            "  -n, --limit N      at most N, 1-1000 (default 1000)\n"
            "  -j, --json         print {\"executions\": [...], \"thresholds\": {...}}\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "With WARREN_API_URL set it asks the executor's HTTP API (its thresholds); on the\n"
            "database URL the thresholds are this configuration's.\n"
            "\n"
            "Exit codes: 0 ok, 1 database or API error, 2 usage or configuration error.\n",
            staleness_usage_line);
}

static int staleness_parse(int argc, char **argv, staleness_opts_t *o)
{
    const cli_option_t options[] = {
        {"health", 0, .value = &o->health},
        {"limit", 'n', .value = &o->limit},
        {"json", 'j', .flag = &o->json},
    };
    const cli_spec_t spec = {"staleness", staleness_usage_line, options, CLI_COUNT(options), NULL};
    o->limit = "1000";
    int rc = cli_parse(&spec, argc, argv, &o->config, NULL);
    int64_t n;
    if (rc != 0)
        return rc;
    if (o->health && !dlq_word_known(dlq_healths, o->health))
        cli_usage_error("staleness", staleness_usage_line,
                        "--health: healthy, warning or stale, not '%.40s'", o->health);
    else if (cli_parse_int64(o->limit, 1, 1000, &n) != 0)
        cli_usage_error("staleness", staleness_usage_line, "--limit wants 1-1000, not '%.40s'",
                        o->limit);
    else
        return 0;
    return -1;
}

static int print(const staleness_opts_t *o, const char *text)
{
    if (o->json) {
        printf("%s\n", text);
        return EXIT_OK;
    }
    static const char *const heads[] = {"ID",   "ACTION",    "STATUS", "WORKER",
                                        "TIME", "THRESHOLD", "HEALTH"};
    json_object *doc = json_tokener_parse(text), *rows;
    cli_table_t t;
    if (!doc || !json_object_object_get_ex(doc, "executions", &rows) ||
        cli_table_init(&t, 7, heads) != 0) {
        json_object_put(doc);
        fprintf(stderr, "warren staleness: the answer is not the expected JSON\n");
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i), *v;
        char cells[7][64] = {{0}};
        static const char *const keys[] = {"id", "action_ref", "status", "worker"};
        for (size_t k = 0; k < 4; k++)
            snprintf(cells[k], sizeof cells[k], "%s",
                     json_object_object_get_ex(row, keys[k], &v) && v ? json_object_get_string(v)
                                                                      : "-");
        json_object_object_get_ex(row, "time_in_state_s", &v);
        cli_fmt_duration(json_object_get_double(v), cells[4], sizeof cells[4]);
        json_object_object_get_ex(row, "threshold_s", &v);
        if (json_object_get_int(v) > 0)
            cli_fmt_duration(json_object_get_double(v), cells[5], sizeof cells[5]);
        else
            snprintf(cells[5], sizeof cells[5], "off");
        json_object_object_get_ex(row, "health", &v);
        snprintf(cells[6], sizeof cells[6], "%s", json_object_get_string(v));
        const char *cell[7];
        for (size_t k = 0; k < 7; k++)
            cell[k] = cells[k];
        if (cli_table_add(&t, cell) != 0)
            break;
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
    json_object_put(doc);
    return EXIT_OK;
}

static int staleness_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const staleness_opts_t *o = opts;
    char *thresholds = dlq_staleness_cfg(cfg);
    const char *p[] = {thresholds, o->health, o->limit};
    PGresult *res = thresholds ? cli_db_query(db, "staleness", q_staleness, 3, p) : NULL;
    int rc = EXIT_RUNTIME;
    if (res) {
        size_t len = strlen(PQgetvalue(res, 0, 0)) + strlen(thresholds) + 48;
        char *doc = malloc(len);
        if (doc) {
            snprintf(doc, len, "{\"executions\":%s,\"thresholds\":%s}", PQgetvalue(res, 0, 0),
                     thresholds);
            rc = print(o, doc);
        }
        free(doc);
    }
    PQclear(res);
    free(thresholds);
    return rc;
}

int cmd_staleness(int argc, char **argv)
{
    staleness_opts_t o = {0};
    int parsed = staleness_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url()) {
        char path[128], *body = NULL;
        snprintf(path, sizeof path, "/api/v1/staleness?limit=%s%s%s", o.limit,
                 o.health ? "&health=" : "", o.health ? o.health : "");
        int code = cli_api_request("staleness", "GET", path, NULL, &body);
        int rc = EXIT_RUNTIME;
        if (code == 200)
            rc = print(&o, body);
        else if (code > 0)
            cli_api_report("staleness", code, body);
        free(body);
        return rc;
    }
    return cli_db_command("staleness", parsed, staleness_usage, o.config, staleness_run, &o);
}
