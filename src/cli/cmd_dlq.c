/*
 * `warren dlq stats|list|queue|show|resolve|redrive|purge`: dead letters as a workflow
 * (docs/dead-letters.md), through the executor's API when WARREN_API_URL is set, else on the
 * database URL with the API's own statements (warren/dlq.h): --json prints the same documents
 * either way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/http.h>
#include "cli/cli.h"
#include "cli/cli_api.h"
#include "cli/cli_db.h"
#include "cli/cli_fmt.h"
#include "warren/dlq.h"
#include "warren/utf8.h"

#define DLQ_LIST_DEFAULT_LIMIT "50"
#define CURSOR_PREFIX "c1."

static const char dlq_usage_line[] = "warren dlq stats|list|queue|show|resolve|redrive|purge|"
                                     "redrive-all|task|cancel-task|resume-task [ID] [OPTIONS] "
                                     "[--json] [-c FILE]";

typedef struct dlq_opts {
    const char *sub, *config, *id;
    const char *filter[8]; /* in filter_names order */
    const char *limit, *cursor, *resolution, *notes, *worker, *expected, *rate;
    const char *canary, *ratio; /* redrive-all --canary N --max-failure-ratio R */
    bool json, unpin, dry_run;
    bool bulk; /* resolve --filter: the open records FILTER matches, not one ID */
} dlq_opts_t;

/* Options and the filter members (warren/dlq.h) they set, in dlq_opts_t.filter order. */
static const char *const filter_names[] = {"resolution",   "reason", "queue", "action",
                                           "execution_id", "since",  "until", "q"};

static void dlq_usage(FILE *out)
{
    fprintf(
        out,
        "usage: %s\n"
        "\n"
        "Dead letters as investigation records (docs/dead-letters.md).\n"
        "\n"
        "  stats [FILTER]        counts by reason, queue and resolution, the oldest pending\n"
        "                        age and the mean time to resolve\n"
        "  list [FILTER]         records newest first (--limit N, --cursor C for the next page)\n"
        "  queue                 the investigation queue: open records, most urgent first\n"
        "                        (reason weight x (1 + ln(1 + age in minutes))), with their\n"
        "                        PRIORITY (--limit N, --cursor C for the next page)\n"
        "  show ID               one record with its snapshot (execution, attempts, x-death,\n"
        "                        raw body and headers, stderr tail, breakers)\n"
        "  resolve ID --resolution R [--notes TEXT]\n"
        "                        set the resolution: pending, investigating, manually_resolved,\n"
        "                        permanent_failure, cancelled\n"
        "  resolve --filter [FILTER] --resolution R [--notes TEXT]\n"
        "          --expected-count N | --dry-run\n"
        "                        close the open records matching FILTER (R: manually_resolved,\n"
        "                        permanent_failure or cancelled), if they are N\n"
        "  redrive ID [--worker W | --unpin]\n"
        "                        a new attempt of the record's execution through the scheduler\n"
        "                        (at most once per record; not counted against retries)\n"
        "  redrive-all [FILTER] [--rate N] [--worker W | --unpin] [--canary N\n"
        "              [--max-failure-ratio R]]\n"
        "                        a bulk redrive task: N records first, then a pause as\n"
        "                        paused_canary when more than R (0-1, default 0) of their new\n"
        "                        runs failed\n"
        "  task ID | cancel-task ID | resume-task ID\n"
        "                        show a task, cancel it, or resume a paused_canary one\n"
        "  purge [FILTER] --expected-count N | --dry-run\n"
        "                        delete the closed records matching FILTER, if they are N\n"
        "\n"
        "FILTER: --resolution R, --reason R (worker_unavailable, timeout, abandoned,\n"
        "max_retries_exceeded, staleness_timeout, poison_message, unprocessable_result,\n"
        "manual), --queue Q, --action A, --execution-id N, --since T, --until T (RFC 3339),\n"
        "--search TEXT (body, error, notes).\n"
        "\n"
        "With WARREN_API_URL set it goes through the executor's HTTP API (WARREN_API_KEY; an\n"
        "operate key to change a record, an admin key to purge or resolve in bulk, its name\n"
        "recorded as resolved_by); on the database URL resolved_by is cli:<your user name>.\n"
        "\n"
        "  -j, --json         print the JSON document\n"
        "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
        "  -h, --help         show this help\n"
        "\n"
        "Exit codes: 0 ok, 1 not found, refused, or a database or API error, 2 usage or\n"
        "configuration error.\n",
        dlq_usage_line);
}

#define usage_error(...) cli_usage_error("dlq", dlq_usage_line, __VA_ARGS__)

/* The filter of the options, checked as the API checks it; NULL after a usage error. */
static json_object *opts_filter(const dlq_opts_t *o)
{
    json_object *in = json_object_new_object();
    for (size_t i = 0; i < CLI_COUNT(filter_names); i++)
        if (o->filter[i])
            json_object_object_add(in, filter_names[i], json_object_new_string(o->filter[i]));
    char err[ERRBUF_SIZE];
    json_object *f = dlq_filter(in, false, err, sizeof err);
    json_object_put(in);
    if (!f)
        usage_error("%s", err);
    return f;
}

/* task, cancel-task and resume-task name a redrive task, not a record. */
static bool is_task(const dlq_opts_t *o)
{
    return !strcmp(o->sub, "task") || !strcmp(o->sub, "cancel-task") ||
           !strcmp(o->sub, "resume-task");
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int dlq_parse(int argc, char **argv, dlq_opts_t *o)
{
    static const char *const subs[] = {"stats",   "list",        "queue",       "show",
                                       "resolve", "redrive",     "purge",       "redrive-all",
                                       "task",    "cancel-task", "resume-task", NULL};
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
        return 1;
    if (argc < 2 || !dlq_word_known(subs, argv[1])) {
        usage_error("unknown subcommand '%s'", argc < 2 ? "" : argv[1]);
        return -1;
    }
    o->sub = argv[1];
    o->limit = DLQ_LIST_DEFAULT_LIMIT;
    const cli_option_t options[] = {
        {"resolution", 0, .value = &o->filter[0]},
        {"reason", 0, .value = &o->filter[1]},
        {"queue", 0, .value = &o->filter[2]},
        {"action", 0, .value = &o->filter[3]},
        {"execution-id", 0, .value = &o->filter[4]},
        {"since", 0, .value = &o->filter[5]},
        {"until", 0, .value = &o->filter[6]},
        {"search", 0, .value = &o->filter[7]},
        {"limit", 'n', .value = &o->limit},
        {"cursor", 0, .value = &o->cursor},
        {"notes", 0, .value = &o->notes},
        {"worker", 'w', .value = &o->worker},
        {"unpin", 0, .flag = &o->unpin},
        {"expected-count", 0, .value = &o->expected},
        {"dry-run", 0, .flag = &o->dry_run},
        {"filter", 0, .flag = &o->bulk},
        {"rate", 0, .value = &o->rate},
        {"canary", 0, .value = &o->canary},
        {"max-failure-ratio", 0, .value = &o->ratio},
        {"json", 'j', .flag = &o->json},
    };
    /* resolve --filter takes no ID: the parse is told so before it sees the operand. */
    for (int i = 2; i < argc && !strcmp(o->sub, "resolve"); i++)
        o->bulk |= !strcmp(argv[i], "--filter");
    bool needs_id = !strcmp(o->sub, "show") || (!strcmp(o->sub, "resolve") && !o->bulk) ||
                    !strcmp(o->sub, "redrive") || is_task(o);
    const cli_spec_t spec = {"dlq", dlq_usage_line, options, CLI_COUNT(options),
                             needs_id ? "ID" : NULL};
    int rc = cli_parse(&spec, argc - 1, argv + 1, &o->config, &o->id);
    if (rc != 0)
        return rc;
    if (o->bulk && strcmp(o->sub, "resolve"))
        return usage_error("--filter belongs to resolve (the other commands take FILTER as it "
                           "is)"),
               -1;
    int64_t n;
    if (needs_id && (!o->id || cli_parse_int64(o->id, 1, INT64_MAX, &n) != 0))
        return usage_error("ID must be a %s id (a positive whole number), not '%s'",
                           is_task(o) ? "task" : "dead letter", o->id ? o->id : ""),
               -1;
    if (o->rate && cli_parse_int64(o->rate, 1, DLQ_RATE_MAX, &n) != 0)
        return usage_error("--rate wants records per second, 1-%d, not '%s'", DLQ_RATE_MAX,
                           o->rate),
               -1;
    if ((o->canary || o->ratio) && strcmp(o->sub, "redrive-all"))
        return usage_error("--canary and --max-failure-ratio belong to redrive-all"), -1;
    if (o->canary && cli_parse_int64(o->canary, 0, DLQ_CANARY_MAX, &n) != 0)
        return usage_error("--canary wants a record count, 0-%d, not '%s'", DLQ_CANARY_MAX,
                           o->canary),
               -1;
    char *end = NULL;
    double ratio = o->ratio ? strtod(o->ratio, &end) : 0;
    if (o->ratio && (!*o->ratio || *end || !(ratio >= 0 && ratio <= 1)))
        return usage_error("--max-failure-ratio wants a number from 0 to 1, not '%s'", o->ratio),
               -1;
    if (o->ratio && (!o->canary || n == 0))
        return usage_error("--max-failure-ratio needs --canary N (N above 0)"), -1;
    if (!strcmp(o->sub, "resolve")) {
        o->resolution = o->filter[0];
        o->filter[0] = NULL;
        if (!dlq_word_known(dlq_resolutions, o->resolution))
            return usage_error("resolve needs --resolution: pending, investigating, "
                               "manually_resolved, permanent_failure or cancelled"),
                   -1;
        if (o->bulk && !dlq_resolution_closed(o->resolution))
            return usage_error("resolve --filter closes records: --resolution "
                               "manually_resolved, permanent_failure or cancelled"),
                   -1;
    }
    if (cli_parse_int64(o->limit, 1, 1000, &n) != 0)
        return usage_error("--limit wants a whole number 1-1000, not '%s'", o->limit), -1;
    if (o->worker && o->unpin)
        return usage_error("give --worker or --unpin, not both"), -1;
    if ((!strcmp(o->sub, "purge") || o->bulk) && !o->dry_run &&
        (!o->expected || cli_parse_int64(o->expected, 0, INT64_MAX, &n) != 0))
        return usage_error("%s needs --expected-count N (the number of records to %s) or "
                           "--dry-run",
                           o->bulk ? "resolve --filter" : "purge", o->bulk ? "close" : "delete"),
               -1;
    json_object *f = opts_filter(o);
    if (!f)
        return -1;
    json_object_put(f);
    return 0;
}

/* ---- printing the documents (the same from either path) ---- */

static const char *str(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

/* Who says where a record's queue and reason come from: "broker" (its x-death is the broker's),
 * "claim" (a header nobody vouches for), "-" (no x-death). */
static const char *x_death_word(json_object *it)
{
    json_object *v;
    if (!json_object_object_get_ex(it, "x_death_verified", &v) || !v)
        return "-";
    return json_object_get_boolean(v) ? "broker" : "claim";
}

/* The list, or the queue (queue: with each record's PRIORITY first). */
static int print_list(json_object *doc, bool queue)
{
    static const char *const heads[] = {"PRIORITY",   "ID",    "EXECUTION", "REASON", "CAUSE",
                                        "RESOLUTION", "QUEUE", "X-DEATH",   "AGE"};
    json_object *items;
    cli_table_t t;
    if (!json_object_object_get_ex(doc, "items", &items) ||
        cli_table_init(&t, queue ? 9 : 8, heads + (queue ? 0 : 1)) != 0)
        return EXIT_RUNTIME;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        char age[32];
        json_object *a;
        cli_fmt_duration(json_object_object_get_ex(it, "age_s", &a) ? json_object_get_double(a) : 0,
                         age, sizeof age);
        const char *row[] = {str(it, "priority"), str(it, "id"),    str(it, "execution_id"),
                             str(it, "reason"),   str(it, "cause"), str(it, "resolution"),
                             str(it, "queue"),    x_death_word(it), age};
        if (cli_table_add(&t, row + (queue ? 0 : 1)) != 0) {
            cli_table_free(&t);
            return EXIT_RUNTIME;
        }
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
    if (str(doc, "next_cursor"))
        printf("next page: --cursor %s\n", str(doc, "next_cursor"));
    return EXIT_OK;
}

static void print_counts(json_object *doc, const char *key, const char *label)
{
    json_object *m;
    printf("%s:", label);
    if (json_object_object_get_ex(doc, key, &m)) {
        json_object_object_foreach(m, k, v)
            printf(" %s=%s", k, json_object_get_string(v));
    }
    printf("\n");
}

/* A task's canary: its state, and the failures once it ended. */
static void print_canary(json_object *doc)
{
    json_object *f;
    const char *state = str(doc, "canary_state");
    if (!state || !strcmp(state, "none"))
        return;
    printf("canary of %s: %s (at most %s failed)\n", str(doc, "canary_count"), state,
           str(doc, "max_failure_ratio"));
    if (!json_object_object_get_ex(doc, "canary_failures", &f) || !f)
        return;
    for (size_t i = 0; i < json_object_array_length(f); i++) {
        json_object *it = json_object_array_get_idx(f, i);
        printf("  record %s: execution %s attempt %s %s%s%s\n", str(it, "record_id"),
               str(it, "execution_id"), str(it, "attempt"), str(it, "outcome"),
               str(it, "error") ? ": " : "", str(it, "error") ? str(it, "error") : "");
    }
}

/* Print doc (JSON text) for the subcommand; EXIT_OK, or EXIT_RUNTIME when it is not JSON. */
static int print_doc(const dlq_opts_t *o, const char *text)
{
    if (o->json && strcmp(o->sub, "show")) {
        printf("%s\n", text);
        return EXIT_OK;
    }
    json_object *doc = json_tokener_parse(text);
    if (!doc) {
        fprintf(stderr, "warren dlq: the answer is not JSON\n");
        return EXIT_RUNTIME;
    }
    int rc = EXIT_OK;
    if (!strcmp(o->sub, "show")) {
        printf("%s\n", json_object_to_json_string_ext(doc, o->json ? JSON_C_TO_STRING_PLAIN
                                                                   : JSON_C_TO_STRING_PRETTY));
    } else if (!strcmp(o->sub, "list") || !strcmp(o->sub, "queue")) {
        rc = print_list(doc, !strcmp(o->sub, "queue"));
    } else if (!strcmp(o->sub, "stats")) {
        printf("total: %s\n", str(doc, "total"));
        print_counts(doc, "by_reason", "by reason");
        print_counts(doc, "by_queue", "by queue");
        print_counts(doc, "by_resolution", "by resolution");
        printf("oldest pending: %s s\nmean time to resolve: %s s\n",
               str(doc, "oldest_pending_age_s") ? str(doc, "oldest_pending_age_s") : "-",
               str(doc, "mean_time_to_resolve_s") ? str(doc, "mean_time_to_resolve_s") : "-");
    } else if (!strcmp(o->sub, "purge")) {
        printf("%s closed record(s) match; %s deleted\n", str(doc, "matched"), str(doc, "deleted"));
    } else if (o->bulk) {
        printf("%s open record(s) match; %s resolved as %s\n", str(doc, "matched"),
               str(doc, "resolved"), str(doc, "resolution"));
    } else if (!strcmp(o->sub, "redrive")) {
        printf("dead letter %s redriven: execution %s, attempt %s\n", str(doc, "id"),
               str(doc, "execution_id"), str(doc, "redrive_attempt"));
    } else if (!strcmp(o->sub, "redrive-all") || is_task(o)) {
        printf("redrive task %s: %s, moved %s of %s (skipped %s) at %s/s%s%s\n", str(doc, "id"),
               str(doc, "status"), str(doc, "moved"), str(doc, "to_move"), str(doc, "skipped"),
               str(doc, "rate"), str(doc, "failure_reason") ? ": " : "",
               str(doc, "failure_reason") ? str(doc, "failure_reason") : "");
        print_canary(doc);
    } else {
        printf("dead letter %s: %s\n", str(doc, "id"), str(doc, "resolution"));
    }
    json_object_put(doc);
    return rc;
}

/* ---- over the API ---- */

static void add_query(char *buf, size_t len, const char *key, const char *value)
{
    if (!value)
        return;
    char *enc = evhttp_encode_uri(value);
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s=%s", strchr(buf, '?') ? "&" : "?", key, enc ? enc : "");
    free(enc);
}

/* The body of POST /api/v1/redrive-tasks from the options. */
static json_object *task_body(const dlq_opts_t *o)
{
    json_object *body = json_object_new_object();
    json_object_object_add(body, "filter", opts_filter(o));
    if (o->rate)
        json_object_object_add(body, "rate", json_object_new_int64(strtoll(o->rate, NULL, 10)));
    if (o->worker)
        json_object_object_add(body, "worker", json_object_new_string(o->worker));
    if (o->unpin)
        json_object_object_add(body, "unpin", json_object_new_boolean(true));
    if (o->canary)
        json_object_object_add(body, "canary_count",
                               json_object_new_int64(strtoll(o->canary, NULL, 10)));
    if (o->ratio)
        json_object_object_add(body, "max_failure_ratio",
                               json_object_new_double(strtod(o->ratio, NULL)));
    return body;
}

static int run_api(const dlq_opts_t *o)
{
    char path[4096];
    const char *method = "GET";
    json_object *body = NULL;
    if (!strcmp(o->sub, "list") || !strcmp(o->sub, "stats")) {
        snprintf(path, sizeof path, "/api/v1/dead-letters%s",
                 !strcmp(o->sub, "stats") ? "/stats" : "");
        for (size_t i = 0; i < CLI_COUNT(filter_names); i++)
            add_query(path, sizeof path, filter_names[i], o->filter[i]);
        if (!strcmp(o->sub, "list")) {
            add_query(path, sizeof path, "limit", o->limit);
            add_query(path, sizeof path, "cursor", o->cursor);
        }
    } else if (!strcmp(o->sub, "queue")) {
        snprintf(path, sizeof path, "/api/v1/dead-letters/investigation-queue");
        add_query(path, sizeof path, "limit", o->limit);
        add_query(path, sizeof path, "cursor", o->cursor);
    } else if (!strcmp(o->sub, "redrive-all")) {
        snprintf(path, sizeof path, "/api/v1/redrive-tasks");
        method = "POST";
        body = task_body(o);
    } else if (is_task(o)) {
        bool cancel = !strcmp(o->sub, "cancel-task"), resume = !strcmp(o->sub, "resume-task");
        snprintf(path, sizeof path, "/api/v1/redrive-tasks/%s%s", o->id,
                 cancel   ? "/cancel"
                 : resume ? "/resume"
                          : "");
        method = cancel || resume ? "POST" : "GET";
    } else if (!strcmp(o->sub, "purge") || o->bulk) {
        snprintf(path, sizeof path, "/api/v1/dead-letters/%s", o->bulk ? "resolve" : "purge");
        method = "POST";
        body = json_object_new_object();
        json_object_object_add(body, "filter", opts_filter(o));
        if (o->bulk)
            json_object_object_add(body, "resolution", json_object_new_string(o->resolution));
        if (o->bulk && o->notes)
            json_object_object_add(body, "notes", json_object_new_string(o->notes));
        if (o->dry_run)
            json_object_object_add(body, "dry_run", json_object_new_boolean(true));
        else
            json_object_object_add(body, "expected_count",
                                   json_object_new_int64(strtoll(o->expected, NULL, 10)));
    } else {
        snprintf(path, sizeof path, "/api/v1/dead-letters/%s%s", o->id,
                 !strcmp(o->sub, "redrive") ? "/redrive" : "");
        if (!strcmp(o->sub, "resolve")) {
            method = "PATCH";
            body = json_object_new_object();
            json_object_object_add(body, "resolution", json_object_new_string(o->resolution));
            if (o->notes)
                json_object_object_add(body, "notes", json_object_new_string(o->notes));
        } else if (!strcmp(o->sub, "redrive")) {
            method = "POST";
            body = json_object_new_object();
            if (o->worker)
                json_object_object_add(body, "worker", json_object_new_string(o->worker));
            if (o->unpin)
                json_object_object_add(body, "unpin", json_object_new_boolean(true));
        }
    }
    char *answer = NULL;
    int code = cli_api_request(
        "dlq", method, path,
        body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL, &answer);
    json_object_put(body);
    int rc = EXIT_RUNTIME;
    if (code == 200 || code == 201)
        rc = print_doc(o, answer);
    else if (code > 0)
        cli_api_report("dlq", code, answer);
    free(answer);
    return rc;
}

/* ---- on the database URL ---- */

/* The cursor "c1.<hex id>" as a decimal id; -1 when it is none. */
static int parse_cursor(const char *c, char *out, size_t len)
{
    const char *hex = c + strlen(CURSOR_PREFIX);
    if (strncmp(c, CURSOR_PREFIX, strlen(CURSOR_PREFIX)) || !*hex || strlen(hex) > 16 ||
        strspn(hex, "0123456789abcdef") != strlen(hex))
        return -1;
    snprintf(out, len, "%llu", strtoull(hex, NULL, 16));
    return 0;
}

static int db_list(PGconn *db, const dlq_opts_t *o, json_object *filter)
{
    char below[24];
    if (o->cursor) {
        if (parse_cursor(o->cursor, below, sizeof below) != 0) {
            fprintf(stderr, "warren dlq: --cursor: not one warren gave out\n");
            return EXIT_USAGE;
        }
        json_object_object_add(filter, "below", json_object_new_string(below));
    }
    const char *p[] = {json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN), o->limit};
    PGresult *res = cli_db_query(db, "dlq", q_dl_list, 2, p);
    if (!res)
        return EXIT_RUNTIME;
    char next[64] = "null";
    if (!strcmp(PQgetvalue(res, 0, 2), o->limit) && !PQgetisnull(res, 0, 1))
        snprintf(next, sizeof next, "\"" CURSOR_PREFIX "%llx\"",
                 strtoull(PQgetvalue(res, 0, 1), NULL, 10));
    const char *items = PQgetvalue(res, 0, 0);
    size_t len = strlen(items) + 96;
    char *doc = malloc(len);
    int rc = EXIT_RUNTIME;
    if (doc) {
        snprintf(doc, len, "{\"items\":%s,\"next_cursor\":%s}", items, next);
        rc = print_doc(o, doc);
    }
    free(doc);
    PQclear(res);
    return rc;
}

static int db_queue(PGconn *db, const dlq_opts_t *o)
{
    char buf[80];
    const char *as_of = NULL, *priority = NULL, *after = NULL;
    if (o->cursor && dlq_queue_cursor(o->cursor, buf, sizeof buf, &as_of, &priority, &after) != 0) {
        fprintf(stderr, "warren dlq: --cursor: not one warren gave out\n");
        return EXIT_USAGE;
    }
    const char *p[] = {as_of, priority, after, o->limit};
    PGresult *res = cli_db_query(db, "dlq", q_dl_queue, 4, p);
    if (!res)
        return EXIT_RUNTIME;
    char *doc = dlq_queue_page(res, o->limit);
    int rc = doc ? print_doc(o, doc) : EXIT_RUNTIME;
    free(doc);
    PQclear(res);
    return rc;
}

static int db_purge(PGconn *db, const dlq_opts_t *o, json_object *filter)
{
    json_object *v;
    const char *r = json_object_object_get_ex(filter, "resolution", &v) ? json_object_get_string(v)
                                                                        : NULL;
    if (r && (!strcmp(r, "pending") || !strcmp(r, "investigating"))) {
        fprintf(stderr, "warren dlq: purge deletes closed records only, never %s ones\n", r);
        return EXIT_USAGE;
    }
    const char *p[] = {json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN),
                       o->dry_run ? NULL : o->expected};
    PGresult *res = cli_db_query(db, "dlq", q_dl_purge, 2, p);
    if (!res)
        return EXIT_RUNTIME;
    int rc = EXIT_RUNTIME;
    const char *matched = PQgetvalue(res, 0, 0), *deleted = PQgetvalue(res, 0, 1);
    if (!o->dry_run && strcmp(matched, o->expected)) {
        fprintf(stderr,
                "warren dlq: --expected-count is %s but %s closed records match: nothing "
                "deleted\n",
                o->expected, matched);
    } else {
        char doc[160];
        snprintf(doc, sizeof doc, "{\"matched\":%s,\"deleted\":%s,\"dry_run\":%s}", matched,
                 deleted, o->dry_run ? "true" : "false");
        rc = print_doc(o, doc);
    }
    PQclear(res);
    return rc;
}

/* resolve --filter: the API's statement, resolved_by the operator. */
static int db_resolve(PGconn *db, const dlq_opts_t *o, json_object *filter, const char *who)
{
    char note[10300];
    dlq_resolve_note(note, sizeof note, who, o->notes);
    const char *p[] = {json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN),
                       o->dry_run ? NULL : o->expected, o->resolution, who, note};
    PGresult *res = cli_db_query(db, "dlq", q_dl_resolve, 5, p);
    if (!res)
        return EXIT_RUNTIME;
    int rc = EXIT_RUNTIME;
    const char *matched = PQgetvalue(res, 0, 0), *resolved = PQgetvalue(res, 0, 1);
    if (!o->dry_run && strcmp(matched, o->expected)) {
        fprintf(stderr,
                "warren dlq: --expected-count is %s but %s open records match: nothing "
                "resolved\n",
                o->expected, matched);
    } else {
        char doc[200];
        snprintf(doc, sizeof doc,
                 "{\"matched\":%s,\"resolved\":%s,\"resolution\":\"%s\",\"dry_run\":%s}", matched,
                 resolved, o->resolution, o->dry_run ? "true" : "false");
        rc = print_doc(o, doc);
    }
    PQclear(res);
    return rc;
}

static int db_redrive(PGconn *db, const warren_config_t *cfg, const dlq_opts_t *o, const char *who)
{
    char err[ERRBUF_SIZE], why[300];
    char *doc = NULL;
    dlq_redrive_result_t result;
    PGresult *res = cli_db_query(db, "dlq", "BEGIN", 0, NULL);
    if (!res)
        return EXIT_RUNTIME;
    PQclear(res);
    int rc = dlq_redrive(db, strtoll(o->id, NULL, 10), o->worker, o->unpin,
                         cfg->dead_letter.max_redrives, who, &result, &doc, why, sizeof why, err,
                         sizeof err);
    if (rc != 0 || !(res = cli_db_query(db, "dlq", "COMMIT", 0, NULL))) {
        if (rc != 0)
            fprintf(stderr, "warren dlq: %s\n", err);
        free(doc);
        return EXIT_RUNTIME;
    }
    PQclear(res);
    if (result == DLQ_REDRIVEN)
        rc = print_doc(o, doc);
    else
        rc = (fprintf(stderr, "warren dlq: %s\n", why), EXIT_RUNTIME);
    free(doc);
    return rc;
}

/* The task statements: start one (redrive-all), show one, ask one to stop. */
static int db_task(PGconn *db, const warren_config_t *cfg, const dlq_opts_t *o, json_object *filter,
                   const char *who)
{
    PGresult *res = NULL;
    int rc = EXIT_RUNTIME;
    if (!strcmp(o->sub, "redrive-all")) {
        char rate[16];
        snprintf(rate, sizeof rate, "%s", o->rate ? o->rate : "");
        if (!o->rate)
            snprintf(rate, sizeof rate, "%d", cfg->redrive.default_rate);
        const char *source = dlq_task_source(filter);
        const char *p[] = {json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN),
                           source,
                           rate,
                           o->worker,
                           o->unpin ? "true" : "false",
                           who,
                           o->canary ? o->canary : "0",
                           o->ratio ? o->ratio : "0"};
        if (!(res = cli_db_query(db, "dlq", q_rt_create, 8, p)))
            return EXIT_RUNTIME;
        if (PQntuples(res) == 0)
            fprintf(stderr, "warren dlq: a redrive task is active on source '%s'\n", source);
        else
            rc = print_doc(o, PQgetvalue(res, 0, 0));
    } else {
        bool cancel = !strcmp(o->sub, "cancel-task"), resume = !strcmp(o->sub, "resume-task");
        const char *p[] = {o->id, who};
        if (!(res = cli_db_query(db, "dlq",
                                 cancel   ? q_rt_cancel
                                 : resume ? q_rt_resume
                                          : q_rt_get,
                                 resume ? 2 : 1, p)))
            return EXIT_RUNTIME;
        const char *before = (cancel || resume) && PQntuples(res) ? PQgetvalue(res, 0, 0)
                                                                  : "running";
        if (PQntuples(res) == 0)
            fprintf(stderr, "warren dlq: no redrive task %s\n", o->id);
        else if (resume && strcmp(before, "paused_canary"))
            fprintf(stderr,
                    "warren dlq: redrive task %s is %s: only a paused_canary task is "
                    "resumed\n",
                    o->id, before);
        else if (strcmp(before, "running") && strcmp(before, "cancelling") &&
                 strcmp(before, "paused_canary"))
            fprintf(stderr, "warren dlq: redrive task %s is %s: it has ended\n", o->id, before);
        else
            rc = print_doc(o, PQgetvalue(res, 0, cancel || resume ? 1 : 0));
    }
    PQclear(res);
    return rc;
}

static int dlq_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const dlq_opts_t *o = opts;
    char who[300];
    cli_operator(who, sizeof who);
    json_object *filter = opts_filter(o);
    if (!filter)
        return EXIT_USAGE;
    int rc = EXIT_RUNTIME;
    PGresult *res = NULL;
    const char *ftext = json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN);
    if (!strcmp(o->sub, "list")) {
        rc = db_list(db, o, filter);
    } else if (!strcmp(o->sub, "queue")) {
        rc = db_queue(db, o);
    } else if (!strcmp(o->sub, "redrive-all") || is_task(o)) {
        rc = db_task(db, cfg, o, filter, who);
    } else if (!strcmp(o->sub, "purge")) {
        rc = db_purge(db, o, filter);
    } else if (o->bulk) {
        rc = db_resolve(db, o, filter, who);
    } else if (!strcmp(o->sub, "redrive")) {
        rc = db_redrive(db, cfg, o, who);
    } else if (!strcmp(o->sub, "stats")) {
        const char *p[] = {ftext};
        if ((res = cli_db_query(db, "dlq", q_dl_stats, 1, p)))
            rc = print_doc(o, PQgetvalue(res, 0, 0));
    } else {
        json_object *change = json_object_new_object();
        if (o->resolution)
            json_object_object_add(change, "resolution", json_object_new_string(o->resolution));
        if (o->notes)
            json_object_object_add(change, "notes", json_object_new_string(o->notes));
        const char *p[] = {o->id, json_object_to_json_string_ext(change, JSON_C_TO_STRING_PLAIN),
                           who};
        bool patch = !strcmp(o->sub, "resolve");
        res = cli_db_query(db, "dlq", patch ? q_dl_patch : q_dl_show, patch ? 3 : 1, p);
        if (res && PQntuples(res) == 0)
            fprintf(stderr, "warren dlq: no dead letter %s\n", o->id);
        else if (res)
            rc = print_doc(o, PQgetvalue(res, 0, 0));
        json_object_put(change);
    }
    PQclear(res);
    json_object_put(filter);
    return rc;
}

int cmd_dlq(int argc, char **argv)
{
    dlq_opts_t o = {0};
    int parsed = dlq_parse(argc, argv, &o);
    if (parsed == 0 && cli_api_url())
        return run_api(&o);
    return cli_db_command("dlq", parsed, dlq_usage, o.config, dlq_run, &o);
}
