/*
 * Throughput of warren itself: insert N requested executions in one statement, then watch them
 * until every one is terminal, and report how many per second reached the expected status.
 * Used by bench/run for (b) core.noop on live workers -> completed, and (c) executions pinned
 * to a worker whose queue has no consumer -> dead-lettered -> failed.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "warren/db.h"

typedef struct exec_opts {
    const char *url;
    const char *label;
    const char *action;
    const char *worker; /* NULL: any worker */
    const char *expect;
    int n;
    int max_wait_s;
} exec_opts_t;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_executions: %s: %s\n", what, detail);
    exit(1);
}

static PGresult *query(PGconn *db, const char *sql, int n, const char *const *params)
{
    char err[ERRBUF_SIZE];
    PGresult *res;
    if (db_exec(db, sql, n, params, &res, err, sizeof err) != 0)
        die("query failed", err);
    return res;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static const char terminal[] = "('completed', 'failed', 'cancelled', 'timeout', 'abandoned')";

/* Poll every 250 ms until all rows in [lo, hi] are terminal. Returns the wall seconds it took.
 * The rates come from the rows' own timestamps, so polling only decides when to stop; a faster
 * poll (counting the whole range) would take CPU from the system being measured. */
static double await_terminal(PGconn *db, const char *lo, const char *hi, const exec_opts_t *o)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM executions WHERE id BETWEEN $1 AND $2 AND status IN %s",
             terminal);
    const char *params[] = {lo, hi};
    int64_t t0 = now_mono_ms(), last_report = t0;
    for (;;) {
        PGresult *res = query(db, sql, 2, params);
        int done = atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
        int64_t now = now_mono_ms();
        if (done >= o->n)
            return (double)(now - t0) / 1000;
        if (now - t0 > (int64_t)o->max_wait_s * 1000) {
            fprintf(stderr, "bench_executions: %s: only %d of %d terminal after %ds\n", o->label,
                    done, o->n, o->max_wait_s);
            return -1;
        }
        if (now - last_report >= 5000) {
            fprintf(stderr, "bench_executions: %s: %d/%d terminal\n", o->label, done, o->n);
            last_report = now;
        }
        sleep_ms(250);
    }
}

/* Rates from the database's own timestamps: first insert to last end, and first end to last end
 * (the steady rate, without the fixed latency in front, e.g. a queue TTL). */
static int report(PGconn *db, const char *lo, const char *hi, double waited, const exec_opts_t *o)
{
    const char *params[] = {lo, hi, o->expect};
    PGresult *res = query(db,
        "SELECT count(*) FILTER (WHERE status = $3),"
        " extract(epoch FROM max(ended_at) - min(created_at)),"
        " extract(epoch FROM max(ended_at) - min(ended_at)),"
        " string_agg(DISTINCT status || coalesce(': ' || left(error, 60), ''), '; ') "
        "  FILTER (WHERE status <> $3) "
        "FROM executions WHERE id BETWEEN $1 AND $2", 3, params);
    int ok = atoi(PQgetvalue(res, 0, 0));
    double total = atof(PQgetvalue(res, 0, 1)), span = atof(PQgetvalue(res, 0, 2));
    printf("%s n=%d expected=%s ok=%d total_s=%.3f span_s=%.3f waited_s=%.3f per_s=%.0f "
           "steady_per_s=%.0f\n",
           o->label, o->n, o->expect, ok, total, span, waited, total > 0 ? ok / total : 0,
           span > 0 ? (ok - 1) / span : 0);
    if (ok != o->n)
        fprintf(stderr, "bench_executions: %s: %d not %s: %s\n", o->label, o->n - ok, o->expect,
                PQgetvalue(res, 0, 3));
    PQclear(res);
    return ok == o->n ? 0 : 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: bench_executions -l LABEL -n N -e EXPECTED_STATUS [-a ACTION]\n"
                 "                        [-w WORKER] [-d DATABASE_URL] [-t MAX_WAIT_S]\n"
                 "DATABASE_URL defaults to $WARREN__DATABASE__URL, ACTION to core.noop.\n");
}

static void parse(int argc, char **argv, exec_opts_t *o)
{
    int ch;
    while ((ch = getopt(argc, argv, "d:l:a:w:e:n:t:h")) != -1) {
        switch (ch) {
        case 'd': o->url = optarg; break;
        case 'l': o->label = optarg; break;
        case 'a': o->action = optarg; break;
        case 'w': o->worker = optarg; break;
        case 'e': o->expect = optarg; break;
        case 'n': o->n = atoi(optarg); break;
        case 't': o->max_wait_s = atoi(optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (!o->url || !o->label || !o->expect || o->n < 2 || o->max_wait_s < 1) {
        usage(stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    exec_opts_t o = {
        .url = getenv("WARREN__DATABASE__URL"), .action = "core.noop", .max_wait_s = 120};
    parse(argc, argv, &o);
    char err[ERRBUF_SIZE], n[16];
    PGconn *db = db_connect(o.url, 5, err, sizeof err);
    if (!db)
        die("connect", err);
    snprintf(n, sizeof n, "%d", o.n);
    const char *params[] = {o.action, o.worker, n};
    /* One statement, one transaction: the scheduler sees all N at once. */
    PGresult *res = query(db,
        "WITH ins AS (INSERT INTO executions (action_ref, params, pinned_worker)"
        " SELECT $1, '{}', $2 FROM generate_series(1, $3::integer) RETURNING id)"
        " SELECT min(id), max(id) FROM ins", 3, params);
    char lo[24], hi[24];
    snprintf(lo, sizeof lo, "%s", PQgetvalue(res, 0, 0));
    snprintf(hi, sizeof hi, "%s", PQgetvalue(res, 0, 1));
    PQclear(res);
    double waited = await_terminal(db, lo, hi, &o);
    int rc = report(db, lo, hi, waited, &o);
    PQfinish(db);
    return waited < 0 ? 1 : rc;
}
