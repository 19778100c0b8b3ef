/*
 * `warren investigate ID` and `warren complete ID --result JSON`: an operator sends an execution
 * to investigation or completes it by hand (docs/api.md, "Operator actions"), through the API
 * when WARREN_API_URL is set, else on the database URL with the API's functions
 * (warren/queries.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "cli/cli_fmt.h"
#include "warren/dlq.h"
#include "warren/queries.h"

static const char investigate_usage_line[] = "warren investigate ID [--notes TEXT] [--json] "
                                             "[-c FILE]";
static const char complete_usage_line[] = "warren complete ID --result JSON [--notes TEXT] "
                                          "[--attempt N] [--json] [-c FILE]";

typedef struct operator_opts {
    const char *verb, *config, *id, *notes, *result, *attempt;
    bool json;
} operator_opts_t;

static void investigate_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Send execution ID to investigation by hand: a dead-letter record of reason manual\n"
            "opens for it, investigating, by you (resolved_by), with --notes, and joins the\n"
            "investigation queue (`warren dlq queue`). For an execution that has not ended or\n"
            "ended without completing (failed, timeout, abandoned); a completed or cancelled one\n"
            "is refused, and so is one that has an open record already (take that one over with\n"
            "`warren dlq resolve ID --resolution investigating`). Prints the record's id (the\n"
            "record with --json).\n"
            "\n"
            "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY: an\n"
            "operate key, whose name is recorded); on the database URL it is cli:<your user\n"
            "name>.\n"
            "\n"
            "  --notes TEXT       why (kept with the record)\n"
            "  -j, --json         print the record as JSON\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit codes: 0 opened, 1 no such execution, refused, or a database or API error,\n"
            "2 usage or configuration error.\n",
            investigate_usage_line);
}

static void complete_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Complete execution ID by hand with the result JSON: for a failed, timed out or\n"
            "abandoned execution, or a requested, scheduled or running one that is stuck, past\n"
            "its staleness threshold (`warren staleness`: health stale). Its history records the\n"
            "step with who did it and --notes; its open dead-letter records close as\n"
            "manually_resolved. Nothing moves a completed execution again: a second completion\n"
            "is refused, and so is a late report of its worker. --attempt N completes it only at\n"
            "attempt N (refused if it moved on). Prints the new status (the row with --json).\n"
            "\n"
            "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY: an\n"
            "operate key, whose name is recorded as completed_by); on the database URL it is\n"
            "cli:<your user name>.\n"
            "\n"
            "  --result JSON      the result (any JSON value)\n"
            "  --notes TEXT       why (kept in the history)\n"
            "  --attempt N        only if the execution is at attempt N\n"
            "  -j, --json         print the execution row as JSON\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit codes: 0 completed, 1 no such execution, refused, or a database or API error,\n"
            "2 usage or configuration error.\n",
            complete_usage_line);
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int operator_parse(int argc, char **argv, operator_opts_t *o, bool complete)
{
    const char *line = complete ? complete_usage_line : investigate_usage_line;
    const cli_option_t options[] = {
        {"notes", 0, .value = &o->notes},
        {"json", 'j', .flag = &o->json},
        {"result", 0, .value = &o->result},
        {"attempt", 0, .value = &o->attempt},
    };
    const cli_spec_t spec = {o->verb, line, options, complete ? 4 : 2, "ID"};
    int rc = cli_parse(&spec, argc, argv, &o->config, &o->id);
    if (rc != 0)
        return rc;
    int64_t n;
    if (!o->id || cli_parse_int64(o->id, 1, INT64_MAX, &n) != 0)
        return cli_usage_error(o->verb, line, "ID must be an execution id, not '%s'",
                               o->id ? o->id : ""),
               -1;
    if (o->attempt && cli_parse_int64(o->attempt, 1, INT32_MAX, &n) != 0)
        return cli_usage_error(o->verb, line, "--attempt wants a whole number from 1"), -1;
    json_object *r = NULL;
    if (complete && (!o->result || !(r = json_tokener_parse(o->result))) &&
        (!o->result || strcmp(o->result, "null")))
        return cli_usage_error(o->verb, line, "--result wants a JSON value, e.g. '{\"ok\":true}'"),
               -1;
    json_object_put(r);
    return 0;
}

/* The API's answer: the record (investigate, 201) or the row (complete, 200). */
static int run_api(const operator_opts_t *o, bool complete)
{
    char path[96], *answer = NULL;
    snprintf(path, sizeof path, "/api/v1/executions/%s/%s", o->id, o->verb);
    json_object *body = json_object_new_object();
    if (o->notes)
        json_object_object_add(body, "notes", json_object_new_string(o->notes));
    if (complete) {
        json_object_object_add(body, "result", json_tokener_parse(o->result));
        if (o->attempt)
            json_object_object_add(body, "attempt",
                                   json_object_new_int64(strtoll(o->attempt, NULL, 10)));
    }
    int code = cli_api_request(o->verb, "POST", path,
                               json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN),
                               &answer);
    json_object_put(body);
    json_object *doc = code == (complete ? 200 : 201) ? cli_api_json(o->verb, answer) : NULL;
    if (code > 0 && !doc)
        cli_api_report(o->verb, code, answer);
    json_object *v = NULL;
    if (doc && o->json)
        printf("%s\n", answer);
    else if (doc && complete)
        printf("execution %s: %s\n", o->id,
               json_object_object_get_ex(doc, "status", &v) ? json_object_get_string(v) : "?");
    else if (doc)
        printf("dead letter %s: investigating execution %s\n",
               json_object_object_get_ex(doc, "id", &v) ? json_object_get_string(v) : "?", o->id);
    free(answer);
    json_object_put(doc);
    return doc ? EXIT_OK : EXIT_RUNTIME;
}

static int investigate_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    (void)cfg;
    const operator_opts_t *o = opts;
    char who[300];
    cli_operator(who, sizeof who);
    const char *p[] = {o->id, who, o->notes};
    PGresult *res = cli_db_query(db, "investigate", q_investigate, 3, p);
    if (!res)
        return EXIT_RUNTIME;
    const char *outcome = PQgetvalue(res, 0, 0), *status = PQgetvalue(res, 0, 1);
    int rc = EXIT_RUNTIME;
    if (!strcmp(outcome, "not_found"))
        fprintf(stderr, "warren investigate: no execution %s\n", o->id);
    else if (!strcmp(outcome, "ended"))
        fprintf(stderr, "warren investigate: execution %s is %s: nothing to investigate\n", o->id,
                status);
    else if (!strcmp(outcome, "open"))
        fprintf(stderr, "warren investigate: execution %s already has open record %s\n", o->id,
                PQgetvalue(res, 0, 2));
    else
        rc = EXIT_OK;
    if (rc == EXIT_OK && o->json)
        printf("%s\n", PQgetvalue(res, 0, 3));
    else if (rc == EXIT_OK)
        printf("dead letter %s: investigating execution %s\n", PQgetvalue(res, 0, 2), o->id);
    PQclear(res);
    return rc;
}

static int complete_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const operator_opts_t *o = opts;
    char who[300];
    cli_operator(who, sizeof who);
    char *thresholds = dlq_staleness_cfg(cfg);
    if (!thresholds)
        return EXIT_RUNTIME;
    const char *p[] = {o->id, o->result, who, o->notes, o->attempt, thresholds};
    PGresult *res = cli_db_query(db, "complete", q_complete, 6, p);
    free(thresholds);
    if (!res)
        return EXIT_RUNTIME;
    const char *outcome = PQgetvalue(res, 0, 0);
    int rc = EXIT_RUNTIME;
    if (!strcmp(outcome, "not_found"))
        fprintf(stderr, "warren complete: no execution %s\n", o->id);
    else if (!strcmp(outcome, "conflict"))
        fprintf(stderr, "warren complete: execution %s is %s: %s\n", o->id, PQgetvalue(res, 0, 1),
                PQgetvalue(res, 0, 3));
    else
        rc = EXIT_OK;
    if (rc == EXIT_OK && o->json)
        printf("%s\n", PQgetvalue(res, 0, 4));
    else if (rc == EXIT_OK)
        printf("execution %s: completed by hand (was %s at attempt %s)\n", o->id,
               PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
    PQclear(res);
    return rc;
}

int cmd_investigate(int argc, char **argv)
{
    operator_opts_t o = {.verb = "investigate"};
    int parsed = operator_parse(argc, argv, &o, false);
    if (parsed == 0 && cli_api_url())
        return run_api(&o, false);
    return cli_db_command("investigate", parsed, investigate_usage, o.config, investigate_run, &o);
}

int cmd_complete(int argc, char **argv)
{
    operator_opts_t o = {.verb = "complete"};
    int parsed = operator_parse(argc, argv, &o, true);
    if (parsed == 0 && cli_api_url())
        return run_api(&o, true);
    return cli_db_command("complete", parsed, complete_usage, o.config, complete_run, &o);
}
