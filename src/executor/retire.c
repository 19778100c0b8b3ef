/*
 * Retired workers (docs/retries.md): a worker without a fresh heartbeat whose last one is older
 * than worker.retire_after_s (a scaled-down StatefulSet pod never comes back) is retired by the
 * monitor. In one transaction, the worker rows locked FOR UPDATE SKIP LOCKED (two executors never
 * retire the same worker at once): every message left in its queue is taken with basic.get on a
 * connection of its own, recorded as a dead letter (reason worker_retired) and its attempt ended
 * (worker_lost): an unpinned execution is retried at once, a pinned one fails with "Worker W
 * retired with this dispatch still queued" (unless its fallback and policy allow a retry). After
 * COMMIT the messages are acked and the queue is deleted if empty (a message that arrived
 * meanwhile keeps it: the next round takes it); then the row says retired. A failure anywhere
 * drops the connection, so what was taken and not acked returns to the queue.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/attempts.h"
#include "executor/dlstore.h"
#include "executor/pgtext.h"
#include "executor/retire.h"
#include "warren/db.h"
#include "warren/exec_status.h"
#include "warren/envelope.h"
#include "warren/log.h"
#include "warren/topology.h"

#define RETIRE_WORKERS_MAX 5      /* per monitor round */
#define RETIRE_MESSAGES_MAX 1000  /* per worker and round; the rest next round */
#define RETIRE_BODY_MAX (1 << 20) /* the envelope limit: nothing bigger is a dispatch of ours */
#define RETIRED_ERROR_FMT "Worker %s retired with this dispatch still queued"

/* clang-format off */
static const char candidates_sql[] =
    "SELECT w.id FROM workers w WHERE w.status <> 'retired'"
    " AND NOT warren_worker_fresh(w, $1::int)"
    " AND w.last_heartbeat < now() - make_interval(secs => $2::int)"
    " ORDER BY w.id LIMIT $3::int FOR UPDATE SKIP LOCKED";

/* The dispatches taken back: still scheduled on that attempt and worker -> failed (the attempt
 * ended with its worker); attempts_end then retries the unpinned ones at once. */
static const char fail_sql[] =
    "UPDATE executions e SET status = " EXEC_SQL(FAILED) ", error = u.error,"
    " result = jsonb_build_object('error', u.error, 'worker', u.worker, 'attempt', u.attempt),"
    " wait_reason = NULL"
    " FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[]) AS u(id, attempt, worker, error)"
    " WHERE e.id = u.id AND e.attempt = u.attempt AND e.worker = u.worker"
    " AND e.status = " EXEC_SQL(SCHEDULED)
    " RETURNING e.id, e.attempt, (e.pinned_worker IS NULL)::int, e.error";

static const char retired_sql[] =
    "UPDATE workers w SET status = 'retired', retired_at = now() WHERE w.id = $1"
    " AND w.status <> 'retired' AND NOT warren_worker_fresh(w, $2::int)"
    " AND w.last_heartbeat < now() - make_interval(secs => $3::int) RETURNING w.id";
/* clang-format on */

typedef struct retire_worker {
    char id[WORKER_ID_MAX + 1];
    char queue[WORKER_ID_MAX + 32]; /* worker.{id}.executions */
    topo_taken_t *taken;
    size_t n;
    uint64_t last_tag;
    bool queue_missing;
} retire_worker_t;

typedef struct retire_round {
    retire_t *job;
    mq_client_t *mq; /* a connection of its own: closing it returns what was not acked */
    retire_worker_t w[RETIRE_WORKERS_MAX];
    size_t nw;
    executor_stats_t counts;
    uint64_t ended;
} retire_round_t;

static void round_reset(retire_round_t *r)
{
    for (size_t i = 0; i < r->nw; i++) {
        for (size_t k = 0; k < r->w[i].n; k++)
            topo_taken_free(&r->w[i].taken[k]);
        free(r->w[i].taken);
    }
    r->nw = 0;
}

/* Take back what is left in one worker's queue (up to RETIRE_MESSAGES_MAX). */
static int take_queue(retire_round_t *r, retire_worker_t *w, char *err, size_t errlen)
{
    w->taken = calloc(RETIRE_MESSAGES_MAX, sizeof *w->taken);
    if (!w->taken) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    while (w->n < RETIRE_MESSAGES_MAX) {
        int rc = topo_take(r->mq, w->queue, RETIRE_BODY_MAX, &w->taken[w->n], &w->queue_missing,
                           err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        w->last_tag = w->taken[w->n].tag;
        w->n++;
    }
    return 0;
}

/* One dead letter per message taken back (deduplicated by message id, so a round that is
 * repeated after an unknown COMMIT adds nothing), and the dispatches it names. */
static int record(PGconn *db, retire_round_t *r, char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t i = 0; i < r->nw; i++)
        total += r->w[i].n;
    if (total == 0)
        return 0;
    dl_record_t *recs = calloc(total, sizeof *recs);
    char(*errors)[160] = calloc(total, sizeof *errors);
    pgarr_t a[4];
    for (int k = 0; k < 4; k++)
        pgarr_init(&a[k]);
    size_t n = 0;
    int rc = -1;
    PGresult *res = NULL;
    if (!recs || !errors) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < r->nw; i++)
        for (size_t k = 0; k < r->w[i].n; k++, n++) {
            const topo_taken_t *t = &r->w[i].taken[k];
            dl_record_t *d = &recs[n];
            snprintf(errors[n], sizeof errors[n], RETIRED_ERROR_FMT, r->w[i].id);
            d->reason = "worker_retired";
            d->body = t->body;
            d->body_len = t->body_len;
            d->routing_key = t->routing_key;
            d->queue = r->w[i].queue;
            d->message_id = d->dedup_id = t->message_id;
            d->error = errors[n];
            snprintf(d->dedup_suffix, sizeof d->dedup_suffix, "/%s/worker_retired", r->w[i].queue);
            envelope_t env;
            dispatch_t disp;
            char why[ERRBUF_SIZE];
            if (envelope_decode(t->body, t->body_len, &env, why, sizeof why) != 0)
                continue; /* recorded as it is; it names no execution */
            if (env.type == MSG_EXECUTION_REQUESTED &&
                dispatch_from_payload(env.payload, &disp, why, sizeof why) == 0) {
                d->has_execution_id = true;
                d->execution_id = disp.execution_id;
                pgarr_add_int(&a[0], disp.execution_id);
                pgarr_add_int(&a[1], disp.attempt);
                pgarr_add(&a[2], r->w[i].id);
                pgarr_add(&a[3], errors[n]);
            }
            envelope_free(&env);
        }
    if (dlstore_insert(db, recs, n, &r->counts, err, errlen) != 0)
        goto out;
    const char *params[4];
    rc = 0;
    for (int k = 0; k < 4; k++)
        if (!(params[k] = pgarr_text(&a[k])))
            rc = -1;
    if (rc != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (a[0].n > 0 && (rc = db_exec(db, fail_sql, 4, params, &res, err, errlen)) == 0) {
        int m = PQntuples(res);
        attempt_end_t *ends = calloc((size_t)m + 1, sizeof *ends);
        if (!ends) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            goto out;
        }
        for (int j = 0; j < m; j++)
            ends[j] = (attempt_end_t){.id = strtoll(PQgetvalue(res, j, 0), NULL, 10),
                                      .attempt = atoi(PQgetvalue(res, j, 1)),
                                      .status = EXEC_NAME_FAILED,
                                      .outcome = OUTCOME_WORKER_LOST,
                                      .error = PQgetvalue(res, j, 3),
                                      .force_retry = atoi(PQgetvalue(res, j, 2)) == 1};
        rc = attempts_end(db, ends, (size_t)m, &r->counts, err, errlen);
        r->ended += (uint64_t)m;
        free(ends);
    }
out:
    PQclear(res);
    for (int k = 0; k < 4; k++)
        pgarr_free(&a[k]);
    free(recs);
    free(errors);
    return rc;
}

static int retire_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    retire_round_t *r = arg;
    const typeof(r->job->cfg->executor) *c = &r->job->cfg->executor;
    char factor[16], after[16], limit[16];
    snprintf(factor, sizeof factor, "%d", c->heartbeat_stale_factor);
    snprintf(after, sizeof after, "%d", r->job->cfg->worker.retire_after_s);
    snprintf(limit, sizeof limit, "%d", RETIRE_WORKERS_MAX);
    const char *params[] = {factor, after, limit};
    PGresult *res = NULL;
    round_reset(r);
    memset(&r->counts, 0, sizeof r->counts);
    stats_init(&r->counts);
    r->ended = 0;
    if (db_exec(db, candidates_sql, 3, params, &res, err, errlen) != 0)
        return -1;
    for (int i = 0; i < PQntuples(res) && r->nw < RETIRE_WORKERS_MAX; i++) {
        retire_worker_t *w = &r->w[r->nw];
        memset(w, 0, sizeof *w);
        snprintf(w->id, sizeof w->id, "%s", PQgetvalue(res, i, 0));
        if (topo_worker_queue(w->id, w->queue, sizeof w->queue) != 0)
            continue;
        r->nw++;
        if (take_queue(r, w, err, errlen) != 0) {
            PQclear(res);
            return -1;
        }
    }
    PQclear(res);
    return record(db, r, err, errlen);
}

static int mark_retired(PGconn *db, void *arg, char *err, size_t errlen)
{
    const char *const *params = arg;
    PGresult *res = NULL;
    int rc = db_exec(db, retired_sql, 3, params, &res, err, errlen);
    PQclear(res);
    return rc;
}

/* After COMMIT: ack, delete the queue if it is empty, and say retired. */
static void finish(retire_round_t *r)
{
    char err[ERRBUF_SIZE], factor[16], after[16];
    snprintf(factor, sizeof factor, "%d", r->job->cfg->executor.heartbeat_stale_factor);
    snprintf(after, sizeof after, "%d", r->job->cfg->worker.retire_after_s);
    for (size_t i = 0; i < r->nw; i++) {
        retire_worker_t *w = &r->w[i];
        char taken[24];
        snprintf(taken, sizeof taken, "%zu", w->n);
        if (w->n > 0 && topo_ack_taken(r->mq, w->last_tag, err, sizeof err) != 0) {
            log_kv(LOG_WARN, "retiring a worker: ack failed; the messages come back next round",
                   "worker", w->id, "error", err, NULL);
            continue;
        }
        if (w->n >= RETIRE_MESSAGES_MAX ||
            topo_delete_queue(r->mq, w->queue, true, err, sizeof err) != 0) {
            log_kv(LOG_INFO, "retiring a worker: its queue is not empty yet; next round", "worker",
                   w->id, "queue", w->queue, "taken", taken, NULL);
            continue;
        }
        const char *params[] = {w->id, factor, after};
        if (dbc_transaction(r->job->db, "marking a worker retired", mark_retired, params) == DBC_OK)
            log_kv(LOG_WARN, "worker retired: its queue was taken back and deleted", "worker",
                   w->id, "queue", w->queue, "taken", taken, NULL);
    }
}

static int peek_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    retire_round_t *r = arg;
    char factor[16], after[16];
    snprintf(factor, sizeof factor, "%d", r->job->cfg->executor.heartbeat_stale_factor);
    snprintf(after, sizeof after, "%d", r->job->cfg->worker.retire_after_s);
    const char *params[] = {factor, after};
    PGresult *res = NULL;
    int rc = db_exec(db,
                     "SELECT count(*) FROM workers w WHERE w.status <> 'retired'"
                     " AND NOT warren_worker_fresh(w, $1::int)"
                     " AND w.last_heartbeat < now() - make_interval(secs => $2::int)",
                     2, params, &res, err, errlen);
    if (rc == 0)
        r->nw = strtoull(PQgetvalue(res, 0, 0), NULL, 10) > 0;
    PQclear(res);
    return rc;
}

void retire_run(retire_t *job)
{
    if (job->cfg->worker.retire_after_s <= 0)
        return;
    retire_round_t peek = {.job = job};
    /* A connection of its own only when some worker is due to retire. */
    if (dbc_transaction(job->db, "looking for workers to retire", peek_work, &peek) != DBC_OK ||
        peek.nw == 0)
        return;
    retire_round_t r = {.job = job};
    mq_options_t o;
    char err[ERRBUF_SIZE];
    mq_options_from_config(&o, job->cfg, "warren-executor");
    r.mq = mq_new(&o);
    if (!r.mq || mq_connect(r.mq, err, sizeof err) != 0) {
        log_kv(LOG_WARN, "retiring workers: no broker connection; next round", "error",
               r.mq ? err : "out of memory", NULL);
        mq_destroy(r.mq);
        return;
    }
    if (dbc_transaction(job->db, "retiring workers", retire_work, &r) == DBC_OK) {
        stats_merge(job->stats, &r.counts);
        finish(&r);
    }
    round_reset(&r);
    mq_destroy(r.mq); /* anything taken and not acked goes back to its queue */
}
