/*
 * The scheduler: each tick claims requested executions (most urgent first, SKIP LOCKED so several
 * executors share the work), assigns workers, commits them as scheduled, then publishes the
 * dispatches with confirms. How each publish ended is recorded in one statement: confirmed
 * (dispatch_confirmed_at), or moved back to requested when the broker refused it or it was
 * never written; a publish without an answer stays scheduled (see publish_unknown).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/assign.h"
#include "executor/fault.h"
#include "executor/pgtext.h"
#include "executor/scheduler.h"
#include "warren/db.h"
#include "warren/envelope.h"
#include "warren/exec_status.h"
#include "warren/ids.h"
#include "warren/log.h"
#include "warren/topology.h"
#include "warren/utf8.h"

/* clang-format off */
/* Statuses that occupy a worker slot (the partial index executions_active_worker_idx). */
#define IN_FLIGHT                                                                               \
    "(" EXEC_SQL(SCHEDULING) ", " EXEC_SQL(SCHEDULED) ", " EXEC_SQL(RUNNING) ", "               \
    EXEC_SQL(CANCELING) ")"
/* A worker is live while online and fresh (schema 007: heartbeat_stale_factor intervals,
 * counted from the later of its heartbeat and when the executor could hear again). */
#define LIVE_WORKER "warren_worker_live(w, $1::int)"
/* The first key of the workers' advisory locks (the second is hashtext(id)): "warr". */
#define SCHED_WORKER_LOCK_CLASS "2003788402"

/*
 * Claims come after the live workers are loaded, in two statements. Pinned rows (their own
 * partial index) always go out. Unpinned rows are claimed only up to the live workers' spare
 * capacity and only when a worker with room offers their action ($2): with every worker busy
 * nothing is claimed, instead of claiming rows just to mark them waiting and rescanning that
 * backlog on every tick (docs/performance.md). Why a row waits is derived when it is read
 * (warren_wait_reason, schema 005).
 */
/* Only rows that are due (a retry or a scheduled submission waits for its time, schema 015),
 * higher priorities first, then in due order (schema 033): one scan of the partial index
 * executions_due_idx (priority DESC, due_at, id), executions_due_pinned_idx for pinned rows,
 * that stops at the batch. Every priority is named (the column's check allows no other) so
 * that the scan seeks to each priority's due rows in turn and never steps over rows that are
 * due later, however many are scheduled ahead (docs/flow-control.md has the plans). */
/* A row past its queue deadline is left to the deadline sweep (deadlines.c); the others carry
 * the milliseconds left of it, the dispatch's expiration. A paused action's rows stay requested
 * (schema 035's action_pauses; docs/flow-control.md). The pinned claim skips them with an
 * anti-join, which keeps its plan an index scan that stops at the batch; the unpinned claim
 * reads the paused actions once (an InitPlan) and compares each row with that short array,
 * cheaper than probing action_pauses for every row of another action the scan steps over. */
#define CLAIM_COLUMNS "SELECT e.id, e.action_ref, e.params::text, e.pinned_worker, e.attempt," \
                      " e.timeout_s, e.redrive_count,"                                      \
                      " ceil(extract(epoch FROM e.due_at + make_interval(secs =>"           \
                      " e.queue_timeout_s) - now()) * 1000)::bigint,"                       \
                      " warren_traceparent(e.id, e.traceparent) FROM executions e"           \
                      " WHERE e.status = " EXEC_SQL(REQUESTED) " AND e.priority = ANY("     \
                      "'{9,8,7,6,5,4,3,2,1,0}'::smallint[]) AND e.due_at <= now() AND"      \
                      " (e.queue_timeout_s IS NULL OR e.due_at + make_interval(secs =>"     \
                      " e.queue_timeout_s) > now()) AND "
#define PAUSED_SQL "SELECT p.action_ref FROM action_pauses p WHERE p.resumed_at IS NULL"
static const char claim_pinned_sql[] =
    CLAIM_COLUMNS "NOT EXISTS (" PAUSED_SQL " AND p.action_ref = e.action_ref)"
    " AND e.pinned_worker IS NOT NULL"
    " ORDER BY e.priority DESC, e.due_at, e.id LIMIT $1 FOR UPDATE OF e SKIP LOCKED";
static const char claim_free_sql[] =
    CLAIM_COLUMNS "e.action_ref <> ALL(ARRAY(" PAUSED_SQL ")) AND e.pinned_worker IS NULL"
    " AND e.action_ref = ANY($2::text[])"
    " ORDER BY e.priority DESC, e.due_at, e.id LIMIT $1 FOR UPDATE OF e SKIP LOCKED";

/* Executors scheduling at once share the workers without waiting for each other and without a
 * row lock (a row lock is a WAL record per worker per tick, and made a second executor slow the
 * first): each tick takes the transaction-scoped advisory lock of every live worker it can get
 * and offers only those workers' room. A worker another executor holds this instant is skipped
 * for this tick; pinned rows go out regardless. The in-flight counts are read by the next
 * statement, whose snapshot sees what the lock's previous holder committed. */
static const char lock_workers_sql[] =
    "SELECT coalesce(array_agg(w.id ORDER BY w.id), '{}')::text FROM workers w WHERE " LIVE_WORKER
    " AND pg_try_advisory_xact_lock(" SCHED_WORKER_LOCK_CLASS ", hashtext(w.id))";

static const char load_workers_sql[] =
    "SELECT w.id, array_to_json(w.capabilities)::text, w.capacity,"
    " (SELECT count(*) FROM executions x WHERE x.worker = w.id AND x.status IN " IN_FLIGHT ")::int"
    " FROM workers w WHERE w.id = ANY($2::text[]) AND " LIVE_WORKER " ORDER BY w.id";

/* One statement for the whole batch: scheduled (attempt + 1), failed (no dispatch can be built),
 * or still requested with its wait reason (written only when it changed). */
static const char update_sql[] =
    "UPDATE executions e SET"
    " status = CASE WHEN u.fail_error IS NOT NULL THEN " EXEC_SQL(FAILED)
    "   WHEN u.worker IS NOT NULL THEN " EXEC_SQL(SCHEDULED) " ELSE e.status END,"
    " error = coalesce(u.fail_error, e.error),"
    " result = CASE WHEN u.fail_error IS NOT NULL THEN jsonb_build_object('error', u.fail_error)"
    "   ELSE e.result END,"
    " worker = coalesce(u.worker, e.worker),"
    " attempt = CASE WHEN u.worker IS NOT NULL THEN e.attempt + 1 ELSE e.attempt END,"
    " scheduled_at = CASE WHEN u.worker IS NOT NULL THEN now() ELSE e.scheduled_at END,"
    " dispatch_confirmed_at = CASE WHEN u.worker IS NOT NULL THEN NULL"
    "   ELSE e.dispatch_confirmed_at END,"
    " wait_reason = u.wait_reason"
    " FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY"
    "   AS u(id, worker, wait_reason, fail_error, ord)"
    " WHERE e.id = u.id AND e.status = " EXEC_SQL(REQUESTED) " AND (u.worker IS NOT NULL"
    "   OR u.fail_error IS NOT NULL OR e.wait_reason IS DISTINCT FROM u.wait_reason)"
    " RETURNING u.ord, (u.worker IS NOT NULL AND u.fail_error IS NULL)::int";

/* One statement records how dispatches ended: confirmed (the monitor then knows it is in a
 * queue), or refused / never written (back to requested). Only a row still scheduled on that
 * attempt is touched: a row the worker's report moved on needs no record of the confirm (the
 * report says more), so a dispatch costs no row version of its own on the happy path. Confirms
 * are recorded SCHED_CONFIRM_DEFER_MS after they came (sched_flush), by which time most reports
 * have; refusals at once. */
static const char settle_sql[] =
    "UPDATE executions e SET"
    " status = CASE WHEN u.confirmed THEN e.status ELSE " EXEC_SQL(REQUESTED) " END,"
    " dispatch_confirmed_at = CASE WHEN u.confirmed THEN now() ELSE e.dispatch_confirmed_at END,"
    " wait_reason = CASE WHEN u.confirmed THEN e.wait_reason"
    "   ELSE '" SCHED_UNCONFIRMED_REASON "' END"
    " FROM unnest($1::bigint[], $2::int[], $3::bool[]) AS u(id, attempt, confirmed)"
    " WHERE e.id = u.id AND e.attempt = u.attempt AND e.status = " EXEC_SQL(SCHEDULED)
    " RETURNING (NOT u.confirmed)::int";
/* clang-format on */

typedef struct sched_job {
    int64_t id;
    int attempt;                              /* of the new dispatch */
    const char *action_ref, *params, *pinned; /* into the claim result */
    const char *traceparent; /* the same: the dispatch's trace_id header (schema 038) */
    int timeout_s;
    int redrive_count;        /* manual redrives so far: the dispatch's redrive_count header */
    int64_t deadline_left_ms; /* of its queue_timeout_s: the dispatch's expiration; 0: none */
    assign_job_t a;
    const char *worker;   /* chosen worker id, NULL when none */
    char fail_error[320]; /* no dispatch can be built: fail it */
    bool scheduled;       /* the UPDATE moved it to scheduled */
    char id_text[24], message_id[40], routing_key[128];
    char *body;
    size_t body_len;
} sched_job_t;

typedef struct sched_batch {
    sched_t *s;
    PGresult *claimed[2], *workers; /* claims: pinned, then unpinned */
    sched_job_t *jobs;
    size_t n;
    assign_worker_t *w;
    json_object **caps; /* one parsed capabilities array per worker */
    const char **cap_names;
    size_t nw;
} sched_batch_t;

static void batch_free(sched_batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->jobs[i].body);
    for (size_t i = 0; i < b->nw; i++)
        json_object_put(b->caps[i]);
    free(b->jobs);
    free(b->w);
    free(b->caps);
    free(b->cap_names);
    PQclear(b->claimed[0]);
    PQclear(b->claimed[1]);
    PQclear(b->workers);
    memset(b, 0, sizeof *b);
}

/* Spare capacity of the live workers, and the actions offered by those with room. */
static int room_of_workers(const sched_batch_t *b, pgarr_t *actions)
{
    int room = 0;
    for (size_t i = 0; i < b->nw; i++) {
        const assign_worker_t *w = &b->w[i];
        if (w->capacity <= w->in_flight)
            continue;
        room += w->capacity - w->in_flight;
        for (size_t c = 0; c < w->n_capabilities; c++)
            pgarr_add(actions, w->capabilities[c]);
    }
    return room;
}

static void add_jobs(sched_batch_t *b, PGresult *res)
{
    for (int r = 0; r < PQntuples(res); r++) {
        sched_job_t *j = &b->jobs[b->n++];
        j->id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        snprintf(j->id_text, sizeof j->id_text, "%" PRId64, j->id);
        j->action_ref = PQgetvalue(res, r, 1);
        j->params = PQgetvalue(res, r, 2);
        j->pinned = PQgetisnull(res, r, 3) ? NULL : PQgetvalue(res, r, 3);
        j->attempt = atoi(PQgetvalue(res, r, 4)) + 1;
        j->timeout_s = PQgetisnull(res, r, 5) ? 0 : atoi(PQgetvalue(res, r, 5));
        j->redrive_count = atoi(PQgetvalue(res, r, 6));
        j->deadline_left_ms = PQgetisnull(res, r, 7) ? 0 : strtoll(PQgetvalue(res, r, 7), NULL, 10);
        if (j->deadline_left_ms < 0)
            j->deadline_left_ms = 0;
        j->traceparent = PQgetvalue(res, r, 8);
        j->a.action_ref = j->action_ref;
        j->a.pinned_worker = j->pinned;
    }
}

/* Claim pinned rows, then unpinned ones up to the spare capacity (load_workers first). */
static int claim(PGconn *db, sched_batch_t *b, char *err, size_t errlen)
{
    int batch = b->s->cfg->executor.batch_size;
    char limit[16];
    snprintf(limit, sizeof limit, "%d", batch);
    const char *params[2] = {limit, NULL};
    if (db_exec(db, claim_pinned_sql, 1, params, &b->claimed[0], err, errlen) != 0)
        return -1;
    int free_limit = batch - PQntuples(b->claimed[0]);
    pgarr_t actions;
    pgarr_init(&actions);
    int room = room_of_workers(b, &actions);
    if (room < free_limit)
        free_limit = room;
    int rc = 0;
    if (free_limit > 0) {
        snprintf(limit, sizeof limit, "%d", free_limit);
        params[1] = pgarr_text(&actions);
        rc = params[1] ? db_exec(db, claim_free_sql, 2, params, &b->claimed[1], err, errlen) : -1;
        if (!params[1])
            snprintf(err, errlen, "out of memory");
    }
    pgarr_free(&actions);
    if (rc != 0)
        return -1;
    size_t total = (size_t)PQntuples(b->claimed[0]) +
                   (b->claimed[1] ? (size_t)PQntuples(b->claimed[1]) : 0);
    b->jobs = calloc(total ? total : 1, sizeof *b->jobs);
    if (!b->jobs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    add_jobs(b, b->claimed[0]);
    if (b->claimed[1])
        add_jobs(b, b->claimed[1]);
    return 0;
}

/* Decode each worker's capabilities column (a JSON array) into caps[i]; returns how many names
 * they hold together, so that one array can hold them all. */
static size_t decode_capabilities(sched_batch_t *b)
{
    size_t total = 0;
    for (size_t i = 0; i < b->nw; i++) {
        b->caps[i] = json_tokener_parse(PQgetvalue(b->workers, (int)i, 1));
        if (json_object_is_type(b->caps[i], json_type_array))
            total += json_object_array_length(b->caps[i]);
    }
    return total;
}

static void fill_workers(sched_batch_t *b)
{
    size_t k = 0;
    for (size_t i = 0; i < b->nw; i++) {
        assign_worker_t *w = &b->w[i];
        w->id = PQgetvalue(b->workers, (int)i, 0);
        w->capacity = atoi(PQgetvalue(b->workers, (int)i, 2));
        w->in_flight = atoi(PQgetvalue(b->workers, (int)i, 3));
        w->capabilities = &b->cap_names[k];
        size_t n = json_object_is_type(b->caps[i], json_type_array)
                       ? json_object_array_length(b->caps[i])
                       : 0;
        for (size_t c = 0; c < n; c++)
            b->cap_names[k++] = json_object_get_string(json_object_array_get_idx(b->caps[i], c));
        w->n_capabilities = n;
    }
}

static int load_workers(PGconn *db, sched_batch_t *b, char *err, size_t errlen)
{
    char factor[16];
    snprintf(factor, sizeof factor, "%d", b->s->cfg->executor.heartbeat_stale_factor);
    PGresult *locked = NULL;
    if (db_exec(db, lock_workers_sql, 1, (const char *[]){factor}, &locked, err, errlen) != 0)
        return -1;
    const char *params[] = {factor, PQgetvalue(locked, 0, 0)};
    int rc = db_exec(db, load_workers_sql, 2, params, &b->workers, err, errlen);
    PQclear(locked);
    if (rc != 0)
        return -1;
    size_t nw = (size_t)PQntuples(b->workers);
    b->w = calloc(nw + 1, sizeof *b->w);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
    b->caps = calloc(nw + 1, sizeof *b->caps);
    if (!b->w || !b->caps) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    b->nw = nw; /* only now: batch_free walks caps[0..nw) */
    b->cap_names = calloc(decode_capabilities(b) + 1, sizeof *b->cap_names);
    if (!b->cap_names) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    fill_workers(b);
    return 0;
}

/* The dispatch envelope for a job; sets fail_error when none can be built, or leaves it waiting
 * (no worker) without a message id. */
static void build_dispatch(sched_job_t *j, int64_t start_deadline_us)
{
    dispatch_t d = {.execution_id = j->id,
                    .attempt = j->attempt,
                    .timeout_s = j->timeout_s,
                    .start_deadline_us = start_deadline_us};
    snprintf(d.worker_id, sizeof d.worker_id, "%s", j->worker);
    snprintf(d.action_ref, sizeof d.action_ref, "%s", j->action_ref);
    if (topo_dispatch_key(j->worker, j->routing_key, sizeof j->routing_key) != 0) {
        snprintf(j->fail_error, sizeof j->fail_error, "worker id '%.*s' cannot name a queue: %s",
                 utf8_prec(j->worker, 64), j->worker, IDS_WORKER_RULE);
        return;
    }
    d.params = json_tokener_parse(j->params);
    if (!d.params) {
        snprintf(j->fail_error, sizeof j->fail_error, "params cannot be encoded for the dispatch");
        return;
    }
    json_object *payload = dispatch_to_payload(&d);
    json_object_put(d.params);
    if (envelope_new_id(j->message_id, sizeof j->message_id) != 0) {
        /* Logged; nothing is wrong with the execution: it waits for the next tick. */
        json_object_put(payload);
        j->worker = NULL;
        j->a.worker = ASSIGN_NONE;
        snprintf(j->a.wait_reason, sizeof j->a.wait_reason,
                 "no message id: the kernel gave no random bytes");
        return;
    }
    j->body = envelope_encode(MSG_EXECUTION_REQUESTED, j->message_id, j->id_text, "executor",
                              j->attempt, j->traceparent, payload, &j->body_len);
    if (!j->body)
        snprintf(j->fail_error, sizeof j->fail_error,
                 "the dispatch message would exceed %d bytes (params too large)",
                 ENVELOPE_MAX_BYTES);
}

static void assign(sched_batch_t *b)
{
    /* No worker may start a dispatch after the monitor could have failed it for not starting:
     * now (before the UPDATE's scheduled_at) + executor.scheduled_timeout_s. */
    int64_t deadline_us =
        (now_wall_ms() + (int64_t)b->s->cfg->executor.scheduled_timeout_s * 1000) * 1000;
    for (size_t i = 0; i < b->n; i++)
        b->jobs[i].a.worker = ASSIGN_NONE;
    assign_worker_t *w = b->w;
    for (size_t i = 0; i < b->n; i++) {
        /* One at a time in claim order: each choice adds to the load the next one sees. */
        assign_batch(w, b->nw, &b->jobs[i].a, 1);
        sched_job_t *j = &b->jobs[i];
        j->worker = j->a.worker == ASSIGN_PINNED ? j->pinned
                    : j->a.worker >= 0           ? w[j->a.worker].id
                                                 : NULL;
        if (j->worker)
            build_dispatch(j, deadline_us);
    }
}

static int write_outcome(PGconn *db, sched_batch_t *b, char *err, size_t errlen)
{
    pgarr_t a[4];
    for (int k = 0; k < 4; k++)
        pgarr_init(&a[k]);
    for (size_t i = 0; i < b->n; i++) {
        sched_job_t *j = &b->jobs[i];
        bool fail = j->fail_error[0] != '\0';
        pgarr_add_int(&a[0], j->id);
        pgarr_add(&a[1], fail ? NULL : j->worker);
        pgarr_add(&a[2], j->worker ? NULL : j->a.wait_reason);
        pgarr_add(&a[3], fail ? j->fail_error : NULL);
    }
    const char *params[4];
    int rc = 0;
    for (int k = 0; k < 4; k++)
        if (!(params[k] = pgarr_text(&a[k])))
            rc = -1;
    PGresult *res = NULL;
    if (rc == 0)
        rc = db_exec(db, update_sql, 4, params, &res, err, errlen);
    else
        snprintf(err, errlen, "out of memory");
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        long ord = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (ord >= 1 && (size_t)ord <= b->n && atoi(PQgetvalue(res, r, 1)) == 1)
            b->jobs[ord - 1].scheduled = true;
    }
    PQclear(res);
    for (int k = 0; k < 4; k++)
        pgarr_free(&a[k]);
    return rc;
}

static int sched_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    sched_batch_t *b = arg;
    if (load_workers(db, b, err, errlen) != 0 || claim(db, b, err, errlen) != 0)
        return -1;
    if (b->n == 0)
        return 0;
    assign(b);
    return write_outcome(db, b, err, errlen);
}

static bool already_declared(const declared_set_t *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->ids[i], id))
            return true;
    return false;
}

static void remember_declared(declared_set_t *s, const char *id)
{
    if (already_declared(s, id))
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        char **ids = realloc(s->ids, cap * sizeof *ids);
        if (!ids)
            return; /* only means declaring again next time */
        s->ids = ids;
        s->cap = cap;
    }
    if ((s->ids[s->n] = strdup(id)) != NULL)
        s->n++;
}

/* Its queue may be gone (a retired worker's is deleted, docs/retries.md): declare it again. */
static void forget_declared(declared_set_t *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->ids[i], id)) {
            free(s->ids[i]);
            s->ids[i] = s->ids[--s->n];
            return;
        }
}

/*
 * A pinned worker may never have run (or be gone): declare its queue, with TTL and DLX, so the
 * dispatch waits there and expires into the dead-letter queue instead of being unroutable.
 */
static void declare_pinned(sched_t *s, const sched_batch_t *b)
{
    /* On the admin connection, which never publishes: a broker that blocks publishers (a
     * resource alarm) stops reading the publisher's connection, RPCs included. */
    if (!mq_connected(s->admin) && mq_try_connect(s->admin) != MQ_OK)
        return; /* the dispatch is unroutable if the queue is missing: back to requested */
    for (size_t i = 0; i < b->n; i++) {
        const sched_job_t *j = &b->jobs[i];
        if (!j->scheduled || j->a.worker != ASSIGN_PINNED ||
            already_declared(&s->declared, j->worker))
            continue;
        char err[ERRBUF_SIZE];
        if (topo_declare_worker(s->admin, s->cfg, j->worker, err, sizeof err) == 0)
            remember_declared(&s->declared, j->worker);
        else
            log_kv(LOG_WARN, "declaring a pinned worker's queue failed", "worker", j->worker,
                   "error", err, NULL);
    }
}

static void queue_settle(sched_t *s, int64_t id, int attempt, bool confirmed)
{
    if (s->n_settle == s->cap_settle) {
        size_t cap = s->cap_settle ? 2 * s->cap_settle : 64;
        sched_settle_t *grown = realloc(s->settle, cap * sizeof *grown);
        if (!grown) {
            /* The row stays scheduled and unconfirmed; the monitor returns it to requested. */
            log_kv(LOG_ERROR, "out of memory remembering how a dispatch ended", NULL);
            return;
        }
        s->settle = grown;
        s->cap_settle = cap;
    }
    s->settle[s->n_settle++] = (sched_settle_t){
        .id = id, .attempt = attempt, .confirmed = confirmed, .at_ms = now_mono_ms()};
    s->n_revert += !confirmed;
}

/* The broker refused these (nack, return, channel closed) or they were never written: move
 * them back to requested. */
static void publish_failed(sched_t *s, const sched_job_t *j, int status)
{
    s->stats->dispatch_failed++;
    log_kv(LOG_WARN, "dispatch refused or never sent; moving it back to requested", "execution_id",
           j->id_text, "worker", j->worker, "status", mq_status_name(status), NULL);
    queue_settle(s, j->id, j->attempt, false);
    if (j->a.worker == ASSIGN_PINNED) /* unroutable: its queue was deleted since (retired) */
        forget_declared(&s->declared, j->worker);
}

/* Written without an answer (confirm timeout, connection lost after the write): the dispatch
 * may be in the worker's queue. Sending it again now could run the execution twice, so it stays
 * scheduled, and the worker's report (or the timeout monitor) settles it. */
static void publish_unknown(sched_t *s, const sched_job_t *j, int status)
{
    s->stats->dispatch_unknown++;
    log_kv(LOG_WARN, "dispatch outcome unknown; it stays scheduled", "execution_id", j->id_text,
           "worker", j->worker, "status", mq_status_name(status), NULL);
}

static void publish_confirmed(sched_t *s, const sched_job_t *j)
{
    s->stats->dispatched++;
    queue_settle(s, j->id, j->attempt, true);
    if (j->a.worker == ASSIGN_PINNED)
        remember_declared(&s->declared, j->worker);
    log_kv(LOG_DEBUG, "dispatched", "execution_id", j->id_text, "worker", j->worker, "message_id",
           j->message_id, NULL);
}

/* A dispatch with a queue deadline expires from the worker queue when it passes (the dead-letter
 * handler then fails it with reason queue_timeout); the queue's TTL bounds it when shorter. */
static int64_t expiration_ms(const sched_t *s, const sched_job_t *j)
{
    int64_t ttl = s->cfg->rabbitmq.worker_queue_ttl_ms;
    if (j->deadline_left_ms <= 0 || (ttl > 0 && j->deadline_left_ms >= ttl))
        return 0;
    return j->deadline_left_ms;
}

static void publish(sched_t *s, sched_batch_t *b)
{
    if (b->n == 0) /* nothing was claimed (and calloc(0) need not return a pointer) */
        return;
    mq_message_t *msgs = calloc(b->n, sizeof *msgs);
    size_t *job_of = calloc(b->n, sizeof *job_of);
    int *results = calloc(b->n, sizeof *results);
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++) {
        sched_job_t *j = &b->jobs[i];
        if (!j->scheduled)
            continue;
        if (!msgs || !job_of || !results) {
            publish_failed(s, j, MQ_ERR_CONNECTION);
            continue;
        }
        msgs[m] = (mq_message_t){.exchange = s->cfg->rabbitmq.exchanges.executions,
                                 .routing_key = j->routing_key,
                                 .body = j->body,
                                 .body_len = j->body_len,
                                 .message_id = j->message_id,
                                 .correlation_id = j->id_text,
                                 .type = msg_type_name(MSG_EXECUTION_REQUESTED),
                                 .execution_id = j->id_text,
                                 .attempt = j->attempt,
                                 .action_ref = j->action_ref,
                                 .redrive_count = j->redrive_count,
                                 .mandatory = true,
                                 .expiration_ms = expiration_ms(s, j)};
        job_of[m++] = i;
    }
    /* results[] says how each one ended; the overall status adds nothing. The tick's fiber
     * waits for the confirms; results are applied on their own lane meanwhile. */
    int64_t t0 = now_mono_ms();
    s->publishing = true;
    if (m > 0 && mq_publish_batch(s->pub, msgs, m, results) != MQ_OK)
        log_kv(LOG_DEBUG, "some dispatches were not confirmed", NULL);
    s->publishing = false;
    if (m > 0)
        metrics_hist_observe(&s->stats->dispatch_latency, (double)(now_mono_ms() - t0) / 1000.0);
    for (size_t k = 0; k < m; k++) {
        stats_confirm(s->stats, results[k]);
        if (results[k] == MQ_OK)
            publish_confirmed(s, &b->jobs[job_of[k]]);
        else if (mq_status_maybe_delivered(results[k]))
            publish_unknown(s, &b->jobs[job_of[k]], results[k]);
        else
            publish_failed(s, &b->jobs[job_of[k]], results[k]);
    }
    free(msgs);
    free(job_of);
    free(results);
}

typedef struct settle_batch {
    sched_t *s;
    bool *due; /* [n_settle]: recorded by this statement */
    size_t reverted;
} settle_batch_t;

static int settle_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    settle_batch_t *r = arg;
    sched_t *s = r->s;
    pgarr_t a[3];
    for (int k = 0; k < 3; k++)
        pgarr_init(&a[k]);
    for (size_t i = 0; i < s->n_settle; i++) {
        if (!r->due[i])
            continue;
        pgarr_add_int(&a[0], s->settle[i].id);
        pgarr_add_int(&a[1], s->settle[i].attempt);
        pgarr_add(&a[2], s->settle[i].confirmed ? "t" : "f");
    }
    const char *params[] = {pgarr_text(&a[0]), pgarr_text(&a[1]), pgarr_text(&a[2])};
    PGresult *res = NULL;
    int rc = -1;
    if (params[0] && params[1] && params[2])
        rc = db_exec(db, settle_sql, 3, params, &res, err, errlen);
    else
        snprintf(err, errlen, "out of memory");
    for (int i = 0; rc == 0 && i < PQntuples(res); i++)
        r->reverted += atoi(PQgetvalue(res, i, 0)) == 1;
    PQclear(res);
    for (int k = 0; k < 3; k++)
        pgarr_free(&a[k]);
    return rc;
}

/* Record the outcomes that are due (all of them when `all`): refusals at once, confirms once
 * SCHED_CONFIRM_DEFER_MS old. Kept on failure: the next tick tries again, before claiming
 * anything new. One statement, no transaction around it: this is on every batch's path. */
static void sched_flush(sched_t *s, bool all)
{
    if (s->n_settle == 0)
        return;
    int64_t now = now_mono_ms();
    bool *due = calloc(s->n_settle, sizeof *due);
    size_t n_due = 0;
    for (size_t i = 0; due && i < s->n_settle; i++) {
        const sched_settle_t *e = &s->settle[i];
        due[i] = all || !e->confirmed || now - e->at_ms >= SCHED_CONFIRM_DEFER_MS;
        n_due += due[i];
    }
    if (!due || n_due == 0) {
        free(due);
        return;
    }
    settle_batch_t r = {.s = s, .due = due};
    if (dbc_statement(s->settle_db, "recording how dispatches ended", settle_work, &r) == DBC_OK) {
        s->stats->dispatch_reverted += r.reverted;
        size_t kept = 0;
        for (size_t i = 0; i < s->n_settle; i++)
            if (!due[i])
                s->settle[kept++] = s->settle[i];
        s->n_settle = kept;
        s->n_revert = 0; /* refusals are always due */
    }
    free(due);
}

void sched_flush_reverts(sched_t *s)
{
    sched_flush(s, true);
}

/* Log the publish breaker's state changes as the scheduler sees them: it can stay open for a
 * long time, and one line per change says what is going on. */
static void note_breaker(sched_t *s, breaker_state_t state)
{
    if (state == s->breaker_state)
        return;
    char retry[24];
    snprintf(retry, sizeof retry, "%lld", (long long)mq_retry_in_ms(s->pub));
    if (state == BREAKER_OPEN && s->breaker_state == BREAKER_CLOSED)
        log_kv(LOG_WARN, "publish breaker open: executions wait as requested", "retry_in_ms", retry,
               NULL);
    else if (state == BREAKER_CLOSED)
        log_kv(LOG_INFO, "publish breaker closed: dispatching again", NULL);
    else
        log_kv(LOG_DEBUG, "publish breaker", "state", breaker_state_name(state), NULL);
    if (state != BREAKER_HALF_OPEN)
        s->breaker_state = state;
}

/* Skip while the publish breaker is open and not yet due for a probe: claimed work could not
 * go out. When a probe is due, the next batch is the probe. */
static bool breaker_blocks(sched_t *s)
{
    const breaker_t *br = mq_breaker(s->pub);
    note_breaker(s, br->state);
    return br->state == BREAKER_OPEN && mq_retry_in_ms(s->pub) > 0;
}

void sched_init(sched_t *s, const warren_config_t *cfg, dbconn_t *db, dbconn_t *settle_db,
                mq_client_t *pub, mq_client_t *admin, executor_stats_t *stats)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->db = db;
    s->settle_db = settle_db;
    s->pub = pub;
    s->admin = admin;
    s->stats = stats;
    s->fault_exit_after_commit = fault_armed("exit_after_commit"); /* tests only */
}

size_t sched_pending_reverts(const sched_t *s)
{
    return s->n_revert;
}

int sched_tick(sched_t *s)
{
    sched_flush(s, false);
    if (s->n_revert > 0)
        return -1; /* the database is not taking writes: do not claim more */
    if (breaker_blocks(s))
        return -1;
    s->stats->sched_ticks++;
    sched_batch_t b = {.s = s};
    if (dbc_transaction(s->db, "scheduling", sched_work, &b) != DBC_OK) {
        batch_free(&b);
        return -1;
    }
    int claimed = (int)b.n;
    size_t dispatched = 0;
    for (size_t i = 0; i < b.n; i++)
        dispatched += b.jobs[i].scheduled;
    s->stats->happy[EXEC_REQUESTED][EXEC_SCHEDULED] += dispatched; /* committed */
    if (s->fault_exit_after_commit && dispatched > 0) {
        log_kv(LOG_WARN, "WARREN_FAULT=exit_after_commit: SIGKILL after the COMMIT", NULL);
        (void)raise(SIGKILL);
    }
    declare_pinned(s, &b);
    publish(s, &b);
    sched_flush(s, false);
    note_breaker(s, mq_breaker(s->pub)->state);
    batch_free(&b);
    /* A full batch that dispatched something: more may be waiting, go again at once. */
    return claimed >= s->cfg->executor.batch_size && dispatched > 0 ? 1 : 0;
}

void sched_free(sched_t *s)
{
    for (size_t i = 0; i < s->declared.n; i++)
        free(s->declared.ids[i]);
    free(s->declared.ids);
    free(s->settle);
}
