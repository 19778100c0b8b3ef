/* `warren action list|pause|resume` (docs/flow-control.md, "Pausing an action"): the actions
 * with their limits, counts and paused state; pause or resume one. On the database, or over
 * the executor's HTTP API when WARREN_API_URL is set (list: a read key; pause and resume: an
 * admin key). Both print the same documents with --json (warren/queries.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "warren/ids.h"
#include "warren/queries.h"
#include "warren/retry.h"

static const char action_usage_line[] =
    "warren action list [--json] | warren action pause|resume ACTION_REF [--json] [-c FILE]";

typedef struct action_opts {
    const char *config;
    const char *sub; /* list, pause, resume */
    const char *ref;
    bool json;
} action_opts_t;

static void action_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "  list     every action the configuration names, a worker offers, has unfinished\n"
            "           executions or is paused: its limits (queue_timeout_s), its unfinished\n"
            "           executions by status, and whether it is paused (by whom, since when)\n"
            "  pause    stop dispatching ACTION_REF: its new and waiting executions stay\n"
            "           requested (running ones finish); recorded with who and when, shared by\n"
            "           every executor, kept across restarts\n"
            "  resume   dispatch ACTION_REF again\n"
            "\n"
            "  -j, --json         print the JSON document (list: an array)\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY: a\n"
            "read key for list, an admin key for pause and resume) instead of the database.\n"
            "\n"
            "Exit codes: 0 ok, 1 database or API error, 2 usage or configuration error.\n",
            action_usage_line);
}

static int action_parse(int argc, char **argv, action_opts_t *o)
{
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
        return 1;
    if (argc < 2 ||
        (strcmp(argv[1], "list") && strcmp(argv[1], "pause") && strcmp(argv[1], "resume"))) {
        (void)cli_usage_error("action", action_usage_line,
                              "unknown subcommand '%s' (list, pause or resume)",
                              argc < 2 ? "" : argv[1]);
        return -1;
    }
    o->sub = argv[1];
    const cli_option_t options[] = {{"json", 'j', .flag = &o->json}};
    bool list = !strcmp(o->sub, "list");
    const cli_spec_t spec = {"action", action_usage_line, options, CLI_COUNT(options),
                             list ? NULL : "ACTION_REF"};
    int rc = cli_parse(&spec, argc - 1, argv + 1, &o->config, &o->ref);
    if (rc == 0 && !list && !ids_action_ref_valid(o->ref)) {
        (void)cli_usage_error("action", action_usage_line, "'%s' is not an action_ref: %s", o->ref,
                              IDS_ACTION_REF_RULE);
        return -1;
    }
    return rc;
}

static const char *str(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : "-";
}

/* The text form of a document: the list as a table, a pause or resume as one line. */
static int print_doc(const action_opts_t *o, const char *doc)
{
    if (o->json) {
        printf("%s\n", doc);
        return EXIT_OK;
    }
    json_object *d = cli_api_json("action", doc);
    if (!d)
        return EXIT_RUNTIME;
    if (json_object_is_type(d, json_type_array)) {
        printf("%-32s %-6s %-13s %9s %9s %7s  %s\n", "ACTION", "PAUSED", "QUEUE_TIMEOUT",
               "REQUESTED", "SCHEDULED", "RUNNING", "PAUSED BY / AT");
        for (size_t i = 0; i < json_object_array_length(d); i++) {
            json_object *a = json_object_array_get_idx(d, i), *lim, *c;
            json_object_object_get_ex(a, "limits", &lim);
            json_object_object_get_ex(a, "counts", &c);
            bool paused = !strcmp(str(a, "paused"), "true");
            printf("%-32s %-6s %-13s %9s %9s %7s  %s%s%s\n", str(a, "action_ref"),
                   paused ? "yes" : "no", str(lim, "queue_timeout_s"), str(c, "requested"),
                   str(c, "scheduled"), str(c, "running"), paused ? str(a, "paused_by") : "",
                   paused ? " " : "", paused ? str(a, "paused_at") : "");
        }
    } else {
        bool paused = !strcmp(str(d, "paused"), "true"),
             changed = !strcmp(str(d, "changed"), "true");
        printf("%s: %s%s (%s %s at %s)\n", str(d, "action_ref"), paused ? "paused" : "not paused",
               changed ? "" : ", unchanged", paused ? "paused by" : "resumed by",
               str(d, paused ? "paused_by" : "resumed_by"),
               str(d, paused ? "paused_at" : "resumed_at"));
    }
    json_object_put(d);
    return EXIT_OK;
}

static int action_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const action_opts_t *o = opts;
    char who[300];
    cli_operator(who, sizeof who);
    char *limits = NULL;
    PGresult *res;
    if (!strcmp(o->sub, "list")) {
        limits = retry_action_limits_json(cfg);
        const char *p[] = {limits};
        res = limits ? cli_db_query(db, "action", q_actions, 1, p) : NULL;
    } else {
        const char *p[] = {o->ref, who};
        res = cli_db_query(db, "action",
                           !strcmp(o->sub, "pause") ? q_action_pause : q_action_resume, 2, p);
    }
    int rc = res ? print_doc(o, PQgetvalue(res, 0, 0)) : EXIT_RUNTIME;
    PQclear(res);
    free(limits);
    return rc;
}

static int action_api(const action_opts_t *o)
{
    char path[320], *body = NULL;
    bool list = !strcmp(o->sub, "list");
    if (list)
        snprintf(path, sizeof path, "/api/v1/actions");
    else
        snprintf(path, sizeof path, "/api/v1/actions/%s/%s", o->ref, o->sub);
    int code = cli_api_request("action", list ? "GET" : "POST", path, list ? NULL : "{}", &body);
    int rc = EXIT_RUNTIME;
    if (code == 200 && list) {
        json_object *d = cli_api_json("action", body), *a;
        if (d && json_object_object_get_ex(d, "actions", &a))
            rc = print_doc(o, json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
        json_object_put(d);
    } else if (code == 200) {
        rc = print_doc(o, body);
    } else if (code >= 0) {
        cli_api_report("action", code, body);
    }
    free(body);
    return rc;
}

int cmd_action(int argc, char **argv)
{
    action_opts_t o = {0};
    int parsed = action_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return action_api(&o);
    return cli_db_command("action", parsed, action_usage, o.config, action_run, &o);
}
