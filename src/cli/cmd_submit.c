/* `warren submit`: insert a requested execution and, with --wait, follow it to its outcome. */
#include <inttypes.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "cli/cli_fmt.h"
#include "warren/db.h"
#include "warren/idempotency.h"
#include "warren/ids.h"
#include "warren/queries.h"
#include "warren/retry.h"
#include "warren/timestamp.h"
#include "warren/utf8.h"

/* --wait hears the end on LISTEN warren_ended (schema 036, as GET ?wait_s= does), registered for
 * this long at a time and renewed before it lapses. Where LISTEN is refused (a pooler in
 * transaction mode), it looks at the row every SUBMIT_POLL_MS instead. */
#define SUBMIT_WAIT_REGISTER_S 60
#define SUBMIT_WAIT_RENEW_MS ((SUBMIT_WAIT_REGISTER_S - 10) * 1000)
#define SUBMIT_POLL_MS 100
/* --params-file: beyond this it could never be dispatched (the envelope's limit is 1 MiB). */
#define PARAMS_FILE_MAX (16 * 1024 * 1024)

static const char submit_usage_line[] =
    "warren submit ACTION_REF [--params JSON | --params-file FILE|-] [--worker ID] [--timeout S] "
    "[--max-attempts N] [--retry-on LIST] [--fallback any] [--at TIME | --in S] [--priority N] "
    "[--queue-timeout S] [--idempotency-key K] "
    "[--wait [--wait-timeout S]] [--json] [-c FILE]";

typedef struct submit_opts {
    const char *config;
    const char *action;
    const char *params;
    const char *params_file; /* "-": standard input */
    char *params_read;       /* what --params-file read; freed by cmd_submit */
    const char *worker;
    const char *timeout_s;    /* validated text, passed to SQL as is */
    const char *max_attempts; /* validated text: the retry policy's max_attempts */
    const char *retry_on;     /* as given; on is the stored form */
    char on[64];
    const char *fallback;      /* "any" */
    const char *idem_key;      /* --idempotency-key */
    const char *at, *in;       /* --at as given, --in validated text */
    char run_at[TS_TEXT_MAX];  /* --at as q_submit reads it (ts_format_us) */
    const char *priority;      /* validated text */
    const char *queue_timeout; /* --queue-timeout, validated text */
    const char *wait_timeout;  /* --wait-timeout as given */
    int64_t wait_timeout_s;    /* 0: wait as long as it takes */
    bool wait;
    bool json;
} submit_opts_t;

static void submit_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Insert an execution of ACTION_REF in status 'requested'; the executor dispatches it.\n"
            "Prints the new execution id (the whole row with --json).\n"
            "\n"
            "  -p, --params JSON      handler parameters, a JSON object (default {})\n"
            "  -f, --params-file FILE the parameters from FILE, or standard input for -\n"
            "                         (for params beyond the 128 KiB a command-line argument\n"
            "                         may hold)\n"
            "  -w, --worker ID        pin it to this worker: no other worker gets it\n"
            "  -t, --timeout S        handler time limit in seconds (default: the worker's)\n"
            "      --max-attempts N   attempts it gets, the first included (default: the retry\n"
            "                         policy of the action in the configuration; docs/retries.md)\n"
            "      --retry-on LIST    outcomes retried, comma-separated: tempfail (exit code 75),\n"
            "                         failed (any failure), timeout, worker_lost\n"
            "      --fallback any     pinned (--worker): if its worker is lost, retry it on any\n"
            "                         worker (as its policy allows worker_lost)\n"
            "      --idempotency-key K  submit it once: within api.idempotency_window_s the same\n"
            "                         K with the same request prints the execution it made\n"
            "                         (nothing new), with another request fails naming it\n"
            "                         (docs/api.md, \"Idempotent submission\")\n"
            "      --at TIME          not before TIME, RFC 3339 (2026-05-01T14:00:00Z); the\n"
            "                         scheduler does not claim it until then\n"
            "      --in S             not before S seconds from now (0 to %d)\n"
            "      --priority N       0 to 9, the highest claimed first (default %d)\n"
            "      --queue-timeout S  fail it (queue_timeout) when no worker has started it S\n"
            "                         seconds after its due time (default: the action's\n"
            "                         actions.<ref>.queue_timeout_s; docs/flow-control.md)\n"
            "      --wait             wait until it ends (told at once, docs/api.md \"Waiting for\n"
            "                         the end\"), print the status, result and error; exit 0\n"
            "                         only when it completed\n"
            "      --wait-timeout S   give up waiting after S seconds (exit 1); default: no limit\n"
            "  -j, --json             print the row as JSON (with --wait: the final row)\n"
            "  -c, --config FILE      configuration file (default: $WARREN_CONFIG)\n"
            "  -h, --help             show this help\n"
            "\n"
            "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY:\n"
            "a submit key) instead of the database; --json prints the same either way.\n"
            "\n"
            "Exit codes: 0 submitted (with --wait: completed), 1 database error, wait timeout or\n"
            "an outcome other than completed, 2 usage or configuration error.\n",
            submit_usage_line, Q_DELAY_MAX_S, Q_PRIORITY_DEFAULT);
}

/* The whole of FILE (or standard input) as a string; NULL after reporting a usage error. */
static char *read_params_file(const char *file)
{
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    if (!f) {
        cli_usage_error("submit", submit_usage_line, "--params-file %s: %m", file);
        return NULL;
    }
    char *buf = malloc(PARAMS_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, PARAMS_FILE_MAX + 1, f) : 0;
    bool bad = !buf || ferror(f) || n > PARAMS_FILE_MAX || memchr(buf, '\0', n);
    if (f != stdin)
        (void)fclose(f);
    if (bad) {
        cli_usage_error("submit", submit_usage_line, "--params-file %s: %s", file,
                        !buf                  ? "out of memory"
                        : n > PARAMS_FILE_MAX ? "larger than 16 MiB"
                                              : "cannot read it as text");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int submit_check(submit_opts_t *o)
{
    char err[ERRBUF_SIZE];
    if (o->params && o->params_file)
        return cli_usage_error("submit", submit_usage_line,
                               "--params and --params-file: give one of them");
    if (o->params_file && !(o->params = o->params_read = read_params_file(o->params_file)))
        return EXIT_USAGE;
    if (!ids_action_ref_valid(o->action))
        return cli_usage_error("submit", submit_usage_line, "invalid action '%.*s': %s",
                               utf8_prec(o->action, 64), o->action, IDS_ACTION_REF_RULE);
    if (o->params && cli_json_object_check(o->params, err, sizeof err) != 0)
        return cli_usage_error("submit", submit_usage_line, "--params must be a JSON object: %s",
                               err);
    if (o->worker && !ids_worker_valid(o->worker))
        return cli_usage_error("submit", submit_usage_line, "invalid worker id '%.*s': %s",
                               utf8_prec(o->worker, 80), o->worker, IDS_WORKER_RULE);
    int64_t v;
    if (o->timeout_s && cli_parse_int64(o->timeout_s, 1, INT32_MAX, &v) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--timeout wants whole seconds, 1 or more, not '%s'", o->timeout_s);
    if (o->wait_timeout && cli_parse_int64(o->wait_timeout, 1, INT32_MAX, &o->wait_timeout_s) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--wait-timeout wants whole seconds, 1 or more, not '%s'",
                               o->wait_timeout);
    if (o->max_attempts && cli_parse_int64(o->max_attempts, 1, RETRY_MAX_ATTEMPTS, &v) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--max-attempts wants a whole number from 1 to %d, not '%s'",
                               RETRY_MAX_ATTEMPTS, o->max_attempts);
    unsigned bits;
    if (o->retry_on && retry_on_parse(o->retry_on, &bits, err, sizeof err) != 0)
        return cli_usage_error("submit", submit_usage_line, "--retry-on: %s", err);
    if (o->retry_on)
        retry_on_text(bits, o->on, sizeof o->on);
    if (o->fallback && strcmp(o->fallback, "any") != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--fallback: the only fallback is 'any', not '%s'", o->fallback);
    if (o->idem_key && !ids_idempotency_key_valid(o->idem_key))
        return cli_usage_error("submit", submit_usage_line, "--idempotency-key: %s",
                               IDS_IDEMPOTENCY_KEY_RULE);
    int64_t us;
    if (o->at && o->in)
        return cli_usage_error("submit", submit_usage_line, "--at and --in: give one of them");
    if (o->at && ts_parse(o->at, &us) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--at wants an RFC 3339 date-time (2026-05-01T14:00:00Z), not '%s'",
                               o->at);
    if (o->at)
        ts_format_us(us, o->run_at, sizeof o->run_at);
    if (o->in && cli_parse_int64(o->in, 0, Q_DELAY_MAX_S, &v) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--in wants whole seconds from 0 to %d, not '%s'", Q_DELAY_MAX_S,
                               o->in);
    if (o->priority && cli_parse_int64(o->priority, Q_PRIORITY_MIN, Q_PRIORITY_MAX, &v) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--priority wants a whole number from %d to %d, not '%s'",
                               Q_PRIORITY_MIN, Q_PRIORITY_MAX, o->priority);
    if (o->queue_timeout && cli_parse_int64(o->queue_timeout, 1, QUEUE_TIMEOUT_MAX_S, &v) != 0)
        return cli_usage_error("submit", submit_usage_line,
                               "--queue-timeout wants whole seconds from 1 to %d, not '%s'",
                               QUEUE_TIMEOUT_MAX_S, o->queue_timeout);
    if (o->wait_timeout && !o->wait)
        return cli_usage_error("submit", submit_usage_line, "--wait-timeout needs --wait");
    return EXIT_OK;
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int submit_parse(int argc, char **argv, submit_opts_t *o)
{
    const cli_option_t options[] = {
        {"params", 'p', .value = &o->params},
        {"params-file", 'f', .value = &o->params_file},
        {"worker", 'w', .value = &o->worker},
        {"timeout", 't', .value = &o->timeout_s},
        {"wait", 0, .flag = &o->wait},
        {"wait-timeout", 0, .value = &o->wait_timeout},
        {"json", 'j', .flag = &o->json},
        {"max-attempts", 0, .value = &o->max_attempts},
        {"retry-on", 0, .value = &o->retry_on},
        {"fallback", 0, .value = &o->fallback},
        {"idempotency-key", 0, .value = &o->idem_key},
        {"at", 0, .value = &o->at},
        {"in", 0, .value = &o->in},
        {"priority", 0, .value = &o->priority},
        {"queue-timeout", 0, .value = &o->queue_timeout},
    };
    const cli_spec_t spec = {"submit", submit_usage_line, options, CLI_COUNT(options),
                             "ACTION_REF"};
    int rc = cli_parse(&spec, argc, argv, &o->config, &o->action);
    if (rc != 0)
        return rc;
    return submit_check(o) == EXIT_OK ? 0 : -1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The outcome of a finished (or, on timeout, unfinished) execution; exit 0 only if completed. */
static int submit_report(const PGresult *res, const submit_opts_t *o)
{
    const char *status = cli_db_field(res, 0, "status");
    if (o->json) /* printed by submit_print_final */
        return status && !strcmp(status, "completed") ? EXIT_OK : EXIT_RUNTIME;
    char took[32];
    const char *secs = cli_db_field(res, 0, "took_s");
    cli_fmt_duration(secs ? atof(secs) : -1, took, sizeof took);
    printf("status: %s (after %s)\n", status, took);
    const char *result = cli_db_field(res, 0, "result");
    const char *error = cli_db_field(res, 0, "error");
    if (result)
        printf("result: %s\n", result);
    if (error)
        printf("error: %s\n", error);
    return !strcmp(status, "completed") ? EXIT_OK : EXIT_RUNTIME;
}

/* --wait --json: the execution's document without its history, as over the API. */
static int submit_print_final(PGconn *db, const char *id, const warren_config_t *cfg)
{
    char factor[16];
    snprintf(factor, sizeof factor, "%d", cfg->executor.heartbeat_stale_factor);
    const char *params[] = {id, factor};
    PGresult *res = cli_db_query(db, "submit", q_execution_doc, 2, params);
    if (!res)
        return -1;
    char *row = PQntuples(res) ? cli_execution_row(PQgetvalue(res, 0, 0)) : NULL;
    printf("%s\n", row ? row : "{}");
    free(row);
    PQclear(res);
    return 0;
}

/* Register the wait (q_wait_register); 0, or -1 after saying why. */
static int submit_wait_register(PGconn *db, const char *id)
{
    const char *params[] = {id, Q_STR(SUBMIT_WAIT_REGISTER_S)};
    PGresult *res = cli_db_query(db, "submit", q_wait_register, 2, params);
    PQclear(res);
    return res ? 0 : -1;
}

static int submit_wait(PGconn *db, const char *id, const submit_opts_t *o,
                       const warren_config_t *cfg)
{
    static const char sql[] =
        "SELECT status, result::text AS result, error, to_jsonb(e)::text AS row, "
        "extract(epoch FROM coalesce(ended_at, now()) - created_at) AS took_s "
        "FROM executions e WHERE id = $1";
    int64_t deadline = o->wait_timeout_s ? now_mono_ms() + o->wait_timeout_s * 1000 : INT64_MAX;
    PGresult *listen = PQexec(db, "LISTEN " Q_WAIT_CHANNEL);
    bool listening = PQresultStatus(listen) == PGRES_COMMAND_OK;
    PQclear(listen);
    int64_t renew_at = 0;
    if (listening) {
        if (submit_wait_register(db, id) != 0)
            return EXIT_RUNTIME;
        renew_at = now_mono_ms() + SUBMIT_WAIT_RENEW_MS;
    }
    for (;;) {
        const char *params[] = {id};
        PGresult *res = cli_db_query(db, "submit", sql, 1, params);
        if (!res)
            return EXIT_RUNTIME;
        if (PQntuples(res) == 0) {
            fprintf(stderr, "warren submit: execution %s disappeared while waiting\n", id);
            PQclear(res);
            return EXIT_RUNTIME;
        }
        const char *status = cli_db_field(res, 0, "status");
        if (cli_status_terminal(status) || now_mono_ms() >= deadline) {
            int rc = submit_report(res, o);
            if (o->json && submit_print_final(db, id, cfg) != 0)
                rc = EXIT_RUNTIME;
            if (!cli_status_terminal(status)) {
                fprintf(stderr, "warren submit: execution %s still %s after waiting %" PRId64 "s\n",
                        id, status, o->wait_timeout_s);
                rc = EXIT_RUNTIME;
            }
            PQclear(res);
            return rc;
        }
        PQclear(res);
        if (!listening) {
            sleep_ms(SUBMIT_POLL_MS);
            continue;
        }
        int64_t now = now_mono_ms();
        if (now >= renew_at) { /* the registration lapses soon: renew it, then look again */
            if (submit_wait_register(db, id) != 0)
                return EXIT_RUNTIME;
            renew_at = now + SUBMIT_WAIT_RENEW_MS;
            continue;
        }
        int64_t until = deadline < renew_at ? deadline : renew_at;
        struct pollfd pfd = {.fd = PQsocket(db), .events = POLLIN};
        if (poll(&pfd, 1, (int)(until - now)) > 0 && !PQconsumeInput(db)) {
            fprintf(stderr, "warren submit: lost the database while waiting: %s",
                    PQerrorMessage(db));
            return EXIT_RUNTIME;
        }
        for (PGnotify *note; (note = PQnotifies(db)) != NULL;)
            PQfreemem(note);
    }
}

/* The submission as JSON: the API's fields (api), or the columns of q_submit. */
static json_object *submission_object(const submit_opts_t *o, bool api)
{
    json_object *row = json_object_new_object();
    json_object_object_add(row, "action_ref", json_object_new_string(o->action));
    if (o->params)
        json_object_object_add(row, "params", json_tokener_parse(o->params));
    if (o->worker)
        json_object_object_add(row, api ? "worker" : "pinned_worker",
                               json_object_new_string(o->worker));
    if (o->timeout_s)
        json_object_object_add(row, "timeout_s", json_object_new_int64(atoll(o->timeout_s)));
    if (o->max_attempts)
        json_object_object_add(row, api ? "max_attempts" : "retry_max_attempts",
                               json_object_new_int64(atoll(o->max_attempts)));
    if (o->retry_on)
        json_object_object_add(row, "retry_on", json_object_new_string(o->on));
    if (o->fallback)
        json_object_object_add(row, "fallback", json_object_new_string(o->fallback));
    if (o->idem_key)
        json_object_object_add(row, "idempotency_key", json_object_new_string(o->idem_key));
    if (o->at) /* the API and q_submit read the same three fields */
        json_object_object_add(row, "run_at", json_object_new_string(o->run_at));
    if (o->in)
        json_object_object_add(row, "delay_s", json_object_new_int64(atoll(o->in)));
    if (o->priority)
        json_object_object_add(row, "priority", json_object_new_int64(atoll(o->priority)));
    if (o->queue_timeout)
        json_object_object_add(row, "queue_timeout_s",
                               json_object_new_int64(atoll(o->queue_timeout)));
    return row;
}

/* The one-element batch of q_submit (the API's statement), as JSON text; NULL on OOM. */
static char *submission_json(const submit_opts_t *o, const warren_config_t *cfg)
{
    json_object *all = json_object_new_array();
    json_object_array_add(all, submission_object(o, false));
    retry_fill_queue_timeouts(cfg, all); /* actions.<ref>.queue_timeout_s, as the API does */
    char *text = strdup(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN));
    json_object_put(all);
    return text;
}

/* With --idempotency-key: the API's statement in a transaction of its own. The execution's id
 * and row as q_submit gives them, or -1 after saying why (a conflict names the execution). */
static int submit_keyed(PGconn *db, const char *rows, const char *who, const submit_opts_t *o,
                        const warren_config_t *cfg, char *id, size_t idlen, char **row)
{
    char err[ERRBUF_SIZE];
    idem_outcome_t out = {.conflict = -1};
    int rc = db_exec(db, "BEGIN", 0, NULL, NULL, err, sizeof err);
    if (rc == 0 &&
        idem_submit(db, rows, who, cfg->api.idempotency_window_s, &out, err, sizeof err) == 0)
        rc = db_exec(db, "COMMIT", 0, NULL, NULL, err, sizeof err);
    else
        rc = -1;
    if (rc != 0) {
        fprintf(stderr, "warren submit: %s\n", err);
    } else {
        snprintf(id, idlen, "%s", PQgetvalue(out.res, 0, 0));
        if (out.conflict >= 0)
            fprintf(stderr,
                    "warren submit: idempotency key '%s' names execution %s, submitted with a "
                    "different request; nothing was submitted\n",
                    o->idem_key, id);
        else if (out.replayed)
            fprintf(stderr,
                    "warren submit: idempotency key '%s' names execution %s, submitted before; "
                    "nothing new was submitted\n",
                    o->idem_key, id);
        *row = out.conflict < 0 ? out.row : NULL;
        out.row = NULL;
        rc = out.conflict < 0 ? 0 : -1;
    }
    idem_outcome_free(&out);
    return rc;
}

static int submit_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const submit_opts_t *o = opts;
    char who[300], id[24];
    cli_operator(who, sizeof who);
    char *rows = submission_json(o, cfg), *row = NULL;
    const char *params[] = {rows, who};
    PGresult *res = NULL;
    int rc = -1;
    if (rows && o->idem_key) {
        rc = submit_keyed(db, rows, who, o, cfg, id, sizeof id, &row);
    } else if (rows && (res = cli_db_query(db, "submit", q_submit, 2, params))) {
        snprintf(id, sizeof id, "%s", cli_db_field(res, 0, "id"));
        row = strdup(cli_db_field(res, 0, "row"));
        rc = row ? 0 : -1;
    }
    free(rows);
    PQclear(res);
    if (rc != 0) {
        free(row);
        return EXIT_RUNTIME;
    }
    if (!o->json || !o->wait)
        printf("%s\n", o->json ? row : id);
    free(row);
    (void)fflush(stdout); /* the id is worth having before a long wait */
    return o->wait ? submit_wait(db, id, o, cfg) : EXIT_OK;
}

int cmd_submit(int argc, char **argv)
{
    submit_opts_t o = {0};
    int parsed = submit_parse(argc, argv, &o);
    int rc;
    if (parsed == 0 && cli_api_url()) {
        json_object *req = submission_object(&o, true);
        rc = cli_api_submit(req, o.json, o.wait, o.wait_timeout_s);
        json_object_put(req);
    } else {
        rc = cli_db_command("submit", parsed, submit_usage, o.config, submit_run, &o);
    }
    free(o.params_read);
    return rc;
}
