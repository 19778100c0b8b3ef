/*
 * Throughput and latency of warren itself, from the database's own timestamps.
 *
 * Batch (default): insert N requested executions in one statement, watch them until every one
 * (or, with -m M, the first M) is terminal, and report how many per second reached the expected
 * status. bench/run uses it for (b) core.noop on live workers -> completed, (c) executions pinned
 * to a worker whose queue has no consumer -> dead-lettered -> failed, and exec handlers.
 *
 * Latency (-r RATE -D SECONDS): insert one execution at a time, RATE a second, as `warren submit`
 * does, then report the percentiles of created_at -> ended_at.
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
    const char *params;
    int n;
    int first;   /* -m: report on the first M to end; 0: all N */
    double rate; /* -r: latency mode, executions per second */
    double secs; /* -D: latency mode, for how long */
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
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char terminal[] = "('completed', 'failed', 'cancelled', 'timeout', 'abandoned')";

/* Poll every 250 ms until all rows in [lo, hi] are terminal. Returns the wall seconds it took.
 * The rates come from the rows' own timestamps, so polling only decides when to stop; a faster
 * poll (counting the whole range) would take CPU from the system being measured. */
static double await_terminal(PGconn *db, const char *lo, const char *hi, int want,
                             const exec_opts_t *o)
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
        if (done >= want)
            return (double)(now - t0) / 1000;
        if (now - t0 > (int64_t)o->max_wait_s * 1000) {
            fprintf(stderr, "bench_executions: %s: only %d of %d terminal after %ds\n", o->label,
                    done, want, o->max_wait_s);
            return -1;
        }
        if (now - last_report >= 10000) {
            fprintf(stderr, "bench_executions: %s: %d/%d terminal\n", o->label, done, want);
            last_report = now;
        }
        sleep_ms(250);
    }
}

/* Rates from the database's own timestamps: first insert to last end, and first end to last end
 * (the steady rate, without the fixed latency in front, e.g. a queue TTL). With -m M only the
 * first M rows to end count (the rest of the backlog is left to the caller). */
static int report(PGconn *db, const char *lo, const char *hi, double waited, const exec_opts_t *o)
{
    char want[16];
    snprintf(want, sizeof want, "%d", o->first ? o->first : o->n);
    const char *params[] = {lo, hi, o->expect, want};
    PGresult *res = query(
        db,
        "WITH e AS (SELECT status, error, created_at, ended_at FROM executions"
        "  WHERE id BETWEEN $1 AND $2 AND ended_at IS NOT NULL ORDER BY ended_at LIMIT $4) "
        "SELECT count(*) FILTER (WHERE status = $3),"
        " extract(epoch FROM max(ended_at) - min(created_at)),"
        " extract(epoch FROM max(ended_at) - min(ended_at)),"
        " string_agg(DISTINCT status || coalesce(': ' || left(error, 60), ''), '; ') "
        "  FILTER (WHERE status <> $3) "
        "FROM e",
        4, params);
    int ok = atoi(PQgetvalue(res, 0, 0)), n = atoi(want);
    double total = atof(PQgetvalue(res, 0, 1)), span = atof(PQgetvalue(res, 0, 2));
    printf("%s n=%d counted=%d expected=%s ok=%d total_s=%.3f span_s=%.3f waited_s=%.3f "
           "per_s=%.0f steady_per_s=%.0f\n",
           o->label, o->n, n, o->expect, ok, total, span, waited, total > 0 ? ok / total : 0,
           span > 0 ? (ok - 1) / span : 0);
    if (ok != n)
        fprintf(stderr, "bench_executions: %s: %d not %s: %s\n", o->label, n - ok, o->expect,
                PQgetvalue(res, 0, 3));
    PQclear(res);
    return ok == n ? 0 : 1;
}

/* Percentiles of created_at -> ended_at, in milliseconds. */
static int report_latency(PGconn *db, const char *lo, const char *hi, const exec_opts_t *o)
{
    const char *params[] = {lo, hi, o->expect};
    PGresult *res = query(db,
                          "WITH e AS (SELECT status, created_at,"
                          "  1000 * extract(epoch FROM ended_at - created_at) AS ms"
                          "  FROM executions WHERE id BETWEEN $1 AND $2) "
                          "SELECT count(*), count(*) FILTER (WHERE status = $3),"
                          " extract(epoch FROM max(created_at) - min(created_at)),"
                          " percentile_disc(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP (ORDER BY ms) "
                          "FROM e",
                          3, params);
    int n = atoi(PQgetvalue(res, 0, 0)), ok = atoi(PQgetvalue(res, 0, 1));
    double spread = atof(PQgetvalue(res, 0, 2));
    double p[4] = {0};
    const char *arr = PQgetvalue(res, 0, 3); /* {a,b,c,d} */
    if (sscanf(arr, "{%lf,%lf,%lf,%lf}", &p[0], &p[1], &p[2], &p[3]) != 4)
        die("percentiles", arr);
    printf("%s n=%d rate=%g achieved_rate=%.1f expected=%s ok=%d p50_ms=%.2f p90_ms=%.2f "
           "p99_ms=%.2f max_ms=%.2f\n",
           o->label, n, o->rate, spread > 0 ? (n - 1) / spread : 0, o->expect, ok, p[0], p[1], p[2],
           p[3]);
    PQclear(res);
    return ok == n ? 0 : 1;
}

/* One statement, one transaction: the scheduler sees all N at once. */
static void insert_batch(PGconn *db, const exec_opts_t *o, char lo[24], char hi[24])
{
    char n[16];
    snprintf(n, sizeof n, "%d", o->n);
    const char *params[] = {o->action, o->worker, n, o->params};
    PGresult *res = query(
        db,
        "WITH ins AS (INSERT INTO executions (action_ref, params, pinned_worker)"
        " SELECT $1, $4::jsonb, $2 FROM generate_series(1, $3::integer) RETURNING id)"
        " SELECT min(id), max(id) FROM ins",
        4, params);
    snprintf(lo, 24, "%s", PQgetvalue(res, 0, 0));
    snprintf(hi, 24, "%s", PQgetvalue(res, 0, 1));
    PQclear(res);
}

/* One row per statement, paced at o->rate: what `warren submit` does, RATE times a second. */
static void insert_paced(PGconn *db, exec_opts_t *o, char lo[24], char hi[24])
{
    const char *params[] = {o->action, o->worker, o->params};
    o->n = (int)(o->rate * o->secs);
    int64_t t0 = now_mono_ms();
    for (int i = 0; i < o->n; i++) {
        int64_t wait = t0 + (int64_t)(i * 1000 / o->rate) - now_mono_ms();
        if (wait > 0)
            sleep_ms((int)wait);
        PGresult *res = query(db,
                              "INSERT INTO executions (action_ref, params, pinned_worker)"
                              " VALUES ($1, $3::jsonb, $2) RETURNING id",
                              3, params);
        snprintf(i == 0 ? lo : hi, 24, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_executions -l LABEL -n N -e EXPECTED_STATUS [-m FIRST] [-a ACTION]\n"
            "                        [-w WORKER] [-p PARAMS] [-d DATABASE_URL] [-t MAX_WAIT_S]\n"
            "       bench_executions -l LABEL -r RATE -D SECONDS -e EXPECTED_STATUS [...]\n"
            "DATABASE_URL defaults to $WARREN__DATABASE__URL, ACTION to core.noop, PARAMS\n"
            "to {}. -m: report on the first FIRST executions to end and leave the rest.\n");
}

static void parse(int argc, char **argv, exec_opts_t *o)
{
    int ch;
    while ((ch = getopt(argc, argv, "d:l:a:w:e:n:m:p:r:D:t:h")) != -1) {
        switch (ch) {
        case 'd': o->url = optarg; break;
        case 'l': o->label = optarg; break;
        case 'a': o->action = optarg; break;
        case 'w': o->worker = optarg; break;
        case 'e': o->expect = optarg; break;
        case 'n': o->n = atoi(optarg); break;
        case 'm': o->first = atoi(optarg); break;
        case 'p': o->params = optarg; break;
        case 'r': o->rate = atof(optarg); break;
        case 'D': o->secs = atof(optarg); break;
        case 't': o->max_wait_s = atoi(optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    bool latency = o->rate > 0 || o->secs > 0;
    bool ok = latency ? o->rate > 0 && o->secs > 0 && o->rate * o->secs >= 2
                      : o->n >= 2 && o->first >= 0 && o->first <= o->n && o->first != 1;
    if (!o->url || !o->label || !o->expect || o->max_wait_s < 1 || !ok) {
        usage(stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    exec_opts_t o = {.url = getenv("WARREN__DATABASE__URL"),
                     .action = "core.noop",
                     .params = "{}",
                     .max_wait_s = 600};
    parse(argc, argv, &o);
    char err[ERRBUF_SIZE], lo[24], hi[24];
    PGconn *db = db_connect(o.url, 5, err, sizeof err);
    if (!db)
        die("connect", err);
    bool latency = o.rate > 0;
    if (latency)
        insert_paced(db, &o, lo, hi);
    else
        insert_batch(db, &o, lo, hi);
    double waited = await_terminal(db, lo, hi, o.first ? o.first : o.n, &o);
    int rc = waited < 0 ? 1
             : latency  ? report_latency(db, lo, hi, &o)
                        : report(db, lo, hi, waited, &o);
    PQfinish(db);
    return rc;
}
