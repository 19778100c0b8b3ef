/* `warren get ID`: one execution with its history and dead letters, for people or as JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/cli_db.h"
#include "cli/cli_api.h"
#include "cli/cli_fmt.h"
#include "warren/queries.h"

static const char get_usage_line[] = "warren get ID [--json] [-c FILE]";

typedef struct get_opts {
    const char *config;
    const char *id;
    bool json;
} get_opts_t;

static void get_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Show execution ID: status, workers, attempt, timestamps, params, result, error,\n"
            "how the handler ended (outcome), its status history, every attempt that ended\n"
            "(with the retry policy's decision) and the dead letters recorded for it.\n"
            "\n"
            "  -j, --json         print it as one JSON object: the row (its final \"attempt\"\n"
            "                     included) plus \"events\", \"dead_letters\" and \"attempts\"\n"
            "                     arrays\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help         show this help\n"
            "\n"
            "With WARREN_API_URL set it asks the executor's HTTP API (WARREN_API_KEY: the key)\n"
            "instead of the database; --json prints the same document either way.\n"
            "\n"
            "Exit codes: 0 ok, 1 no such execution or a database error, 2 usage or\n"
            "configuration error.\n",
            get_usage_line);
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int get_parse(int argc, char **argv, get_opts_t *o)
{
    return cli_parse_id("get", get_usage_line, argc, argv, &o->config, &o->json, &o->id);
}

/* With --json: the row, its history and its dead letters as one JSON document built by the
 * server (warren/queries.h), so every column (also ones added by later migrations) comes out
 * with its JSON type, the same document the API answers. */
/* clang-format off */
/* Timestamps read as "2024-05-01 12:00:00.123 UTC" in the session's time zone. */
#define TS(col) "to_char(" col ", 'YYYY-MM-DD HH24:MI:SS.MS TZ')"
#define SINCE(col) "extract(epoch FROM now() - " col ")"

static const char get_text_sql[] =
    "SELECT id, action_ref, status, worker, pinned_worker, attempt, timeout_s,"
    " params::text AS params, result::text AS result, error,"
    /* the wait reason (stored or derived, 003/005); outcome NULL before migration 004 */
    " warren_wait_reason(e, $2::int) AS wait_reason, (to_jsonb(e) -> 'outcome')::text AS outcome,"
    " " TS("created_at") " AS created, " SINCE("created_at") " AS created_age,"
    " " TS("scheduled_at") " AS scheduled, " SINCE("scheduled_at") " AS scheduled_age,"
    " " TS("started_at") " AS started, " SINCE("started_at") " AS started_age,"
    " " TS("ended_at") " AS ended, " SINCE("ended_at") " AS ended_age,"
    " " TS("updated_at") " AS updated, " SINCE("updated_at") " AS updated_age,"
    " extract(epoch FROM ended_at - coalesce(started_at, created_at)) AS took_s,"
    " retries, manual_retries, retry_max_attempts, retry_on, fallback,"
    " (to_jsonb(e) ->> 'priority') AS priority, " TS("due_at") " AS due,"
    " " SINCE("due_at") " AS due_age "
    "FROM executions e WHERE id = $1";

/* note: 'late completion' (migration 006) */
static const char get_events_sql[] =
    "SELECT " TS("at") ", from_status, to_status, worker, attempt, to_jsonb(v) ->> 'note', error "
    "FROM execution_history v WHERE execution_id = $1 ORDER BY seq";

/* Every attempt that ended (schema 015), and what the retry policy made of it. */
static const char get_attempts_sql[] =
    "SELECT attempt, kind, worker, " TS("started_at") ", " TS("ended_at") ", outcome,"
    " decision, delay_ms, error FROM execution_attempt_history WHERE execution_id = $1"
    " ORDER BY seq";

static const char get_dead_letters_sql[] =
    "SELECT id, " TS("received_at") ", reason, queue, resolution, error "
    "FROM dead_letters WHERE execution_id = $1 ORDER BY id";
/* clang-format on */

static void get_line(const char *label, const char *value)
{
    printf("  %-14s %s\n", label, value ? value : "-");
}

/* Column name, e.g. created: "2024-05-01 12:00:00.123 UTC (4m05s ago)" from created and
 * created_age ("(in 4m05s)" for a time to come, a due time), or "-". */
static void get_time_line(const PGresult *res, const char *name)
{
    char age_col[32];
    snprintf(age_col, sizeof age_col, "%s_age", name);
    const char *ts = cli_db_field(res, 0, name);
    const char *age = cli_db_field(res, 0, age_col);
    if (!ts) {
        get_line(name, NULL);
        return;
    }
    char ago[32];
    double secs = age ? atof(age) : 0;
    cli_fmt_duration(age ? (secs < 0 ? -secs : secs) : -1, ago, sizeof ago);
    printf("  %-14s %s (%s%s%s)\n", name, ts, secs < 0 ? "in " : "", ago, secs < 0 ? "" : " ago");
}

static void get_print_row(const PGresult *r)
{
    printf("execution %s\n", cli_db_field(r, 0, "id"));
    get_line("action", cli_db_field(r, 0, "action_ref"));
    get_line("status", cli_db_field(r, 0, "status"));
    if (cli_db_field(r, 0, "wait_reason"))
        get_line("wait reason", cli_db_field(r, 0, "wait_reason"));
    get_line("worker", cli_db_field(r, 0, "worker"));
    get_line("pinned worker", cli_db_field(r, 0, "pinned_worker"));
    get_line("attempt", cli_db_field(r, 0, "attempt"));
    const char *timeout = cli_db_field(r, 0, "timeout_s");
    char buf[64];
    snprintf(buf, sizeof buf, "%s%s", timeout ? timeout : "worker default", timeout ? "s" : "");
    get_line("timeout", buf);
    get_line("priority", cli_db_field(r, 0, "priority"));
    static const char *const times[] = {"created", "due",   "scheduled",
                                        "started", "ended", "updated"};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        get_time_line(r, times[i]);
    const char *took = cli_db_field(r, 0, "took_s");
    if (took) {
        cli_fmt_duration(atof(took), buf, sizeof buf);
        get_line("duration", buf);
    }
    get_line("params", cli_db_field(r, 0, "params"));
    get_line("result", cli_db_field(r, 0, "result"));
    get_line("error", cli_db_field(r, 0, "error"));
    if (cli_db_field(r, 0, "outcome"))
        get_line("outcome", cli_db_field(r, 0, "outcome"));
    snprintf(buf, sizeof buf, "%s automatic, %s manual", cli_db_field(r, 0, "retries"),
             cli_db_field(r, 0, "manual_retries"));
    get_line("retries", buf);
    const char *max = cli_db_field(r, 0, "retry_max_attempts"),
               *on = cli_db_field(r, 0, "retry_on");
    const char *fallback = cli_db_field(r, 0, "fallback");
    if (max || on || fallback) {
        snprintf(buf, sizeof buf, "max_attempts=%s retry_on=%s fallback=%s", max ? max : "-",
                 on ? on : "-", fallback ? fallback : "-");
        get_line("retry override", buf);
    }
}

/* A titled table of what sql finds for the execution; nothing but the title when empty. */
static int get_print_related(PGconn *db, const char *id, const char *title, const char *sql,
                             const char *const *headers)
{
    const char *params[] = {id};
    PGresult *res = cli_db_query(db, "get", sql, 1, params);
    if (!res)
        return -1;
    printf("\n%s (%d)\n", title, PQntuples(res));
    int rc = PQntuples(res) ? cli_db_print_table(res, headers, stdout) : 0;
    PQclear(res);
    return rc;
}

static int get_print_text(PGconn *db, const PGresult *row, const char *id)
{
    static const char *const events[] = {"AT", "FROM", "TO", "WORKER", "ATTEMPT", "NOTE", "ERROR"};
    static const char *const dead_letters[] = {"ID",    "RECEIVED",   "REASON",
                                               "QUEUE", "RESOLUTION", "ERROR"};
    get_print_row(row);
    static const char *const attempts[] = {"ATTEMPT", "KIND",     "WORKER",   "STARTED", "ENDED",
                                           "OUTCOME", "DECISION", "DELAY MS", "ERROR"};
    if (get_print_related(db, id, "history", get_events_sql, events) != 0 ||
        get_print_related(db, id, "attempts", get_attempts_sql, attempts) != 0 ||
        get_print_related(db, id, "dead letters", get_dead_letters_sql, dead_letters) != 0)
        return EXIT_RUNTIME;
    return EXIT_OK;
}

static int get_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const get_opts_t *o = opts;
    char factor[16];
    snprintf(factor, sizeof factor, "%d", cfg->executor.heartbeat_stale_factor);
    const char *params[] = {o->id, factor};
    PGresult *res = cli_db_query(db, "get", o->json ? q_execution_doc : get_text_sql, 2, params);
    if (!res)
        return EXIT_RUNTIME;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "warren get: no execution %s\n", o->id);
        PQclear(res);
        return EXIT_RUNTIME;
    }
    int rc = EXIT_OK;
    if (o->json)
        printf("%s\n", cli_db_field(res, 0, "doc"));
    else
        rc = get_print_text(db, res, o->id);
    PQclear(res);
    return rc;
}

int cmd_get(int argc, char **argv)
{
    get_opts_t o = {0};
    int parsed = get_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return cli_api_get(o.id, o.json);
    return cli_db_command("get", parsed, get_usage, o.config, get_run, &o);
}
