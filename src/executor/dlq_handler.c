/*
 * The dead-letter handler: every message in the dead-letter queue becomes a dead_letters row,
 * and a dispatch that expired (or was rejected) in a worker queue fails its execution — both
 * in one transaction, acked only after COMMIT. Messages it cannot read are stored raw.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/attempts.h"
#include "executor/deadlines.h"
#include "executor/dlq_handler.h"
#include "executor/dlstore.h"
#include "executor/headers.h"
#include "executor/identity.h"
#include "executor/inmsg.h"
#include "executor/pgtext.h"
#include "executor/transitions.h"
#include "warren/db.h"
#include "warren/envelope.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/signing.h"
#include "warren/timestamp.h"

#define TTL_EXPIRED_ERROR "Worker queue TTL expired"
#define START_DEADLINE_ERROR "Start deadline passed before a worker could start it"

/* One dead letter on its way to a row. */
typedef struct dlq_item {
    inmsg_t in;       /* reason: the dead_letters reason, whatever the outcome */
    xdeath_t xd;      /* the dead-lettering that brought it to the dead-letter queue */
    bool parked;      /* it outlived the dead-letter queue's retention: from the parking queue */
    xdeath_t parking; /* then: its expiry from the dead-letter queue */
    char note[ERRBUF_SIZE]; /* the record's error when parked */
    json_object *headers;
    dispatch_t disp;
    bool needs_row; /* a well-formed dispatch: look its execution up */
    /* from the database */
    char *snapshot;
    bool fail_execution;
    bool queue_timeout; /* expired past the execution's queue deadline (schema 035) */
    char expected_status[16];
    char *result; /* JSON text for the failed execution */
} dlq_item_t;

/* The names dlq_set_names copied. */
static char dlx_exchange[256], dlx_queue[256];

void dlq_set_names(const char *exchange, const char *queue)
{
    snprintf(dlx_exchange, sizeof dlx_exchange, "%s", exchange ? exchange : "");
    snprintf(dlx_queue, sizeof dlx_queue, "%s", queue ? queue : "");
}

/* worker.ID.executions, with a valid worker id. */
static bool worker_queue(const char *q)
{
    static const char pre[] = "worker.", post[] = ".executions";
    size_t n = strlen(q), np = sizeof pre - 1, ns = sizeof post - 1;
    if (n <= np + ns || strncmp(q, pre, np) != 0 || strcmp(q + n - ns, post) != 0)
        return false;
    char id[256];
    snprintf(id, sizeof id, "%.*s", (int)(n - np - ns), q + np);
    return ids_worker_valid(id);
}

/* Whether the broker wrote the x-death that the record's queue and reason come from: "t", "f",
 * or NULL without one. Anyone can write the header and publish straight into the dead-letter
 * queue; the broker dead-letters a dispatch from a worker queue through the dead-letter exchange
 * (or, parked, from the dead-letter queue), and a dispatch is the executor's when it passed the
 * identity and signature checks (needs_row). A signed dispatch replayed into the exchange with a
 * made-up x-death still passes: per-worker broker users tell that one (docs/security.md). */
static const char *x_death_verified(const dlq_item_t *it)
{
    if (!it->xd.present)
        return NULL;
    const char *ex = it->in.d->exchange;
    bool path = it->parked ? !strcmp(it->parking.queue, dlx_queue)
                           : ex && dlx_exchange[0] && !strcmp(ex, dlx_exchange);
    return path && worker_queue(it->xd.queue) && it->needs_row ? "t" : "f";
}

/* What can be known without the database: parse errors, wrong types, missing ids. */
static void classify(dlq_item_t *it, const mq_delivery_t *d)
{
    char err[ERRBUF_SIZE];
    if (inmsg_open(&it->in, d) != 0)
        return;
    if (it->in.env.type != MSG_EXECUTION_REQUESTED) {
        inmsg_reject(&it->in, "unknown_type",
                     "message type '%s' is not a dispatch (ExecutionRequested)",
                     it->in.env.type_name);
        return;
    }
    jf_t p = {it->in.env.payload, "payload", err, sizeof err};
    json_object *id;
    if (jf_value(&p, "execution_id", false, &id) == 0) { /* absent or null */
        inmsg_reject(&it->in, "missing_execution_id", "%s",
                     "the dispatch payload has no execution_id");
        return;
    }
    if (dispatch_from_payload(it->in.env.payload, &it->disp, err, sizeof err) != 0) {
        inmsg_reject(&it->in, "parse_error", "%s", err);
        return;
    }
    it->in.has_execution_id = true; /* recorded with its execution, whatever is decided */
    it->in.execution_id = it->disp.execution_id;
    if (ident_check_executor(d, err, sizeof err) != 0) { /* recorded; fails nothing */
        inmsg_reject(&it->in, IDENT_REASON, "%s", err);
        return;
    }
    if (sign_check(d, err, sizeof err) != 0) { /* not the executor's dispatch: fails nothing */
        inmsg_reject(&it->in, SIGN_REASON, "%s", err);
        return;
    }
    it->needs_row = true;
}

/* The broker's reason for dead-lettering, as a dead_letters reason word. */
static const char *broker_reason(const dlq_item_t *it)
{
    if (it->xd.present && dlrec_reason_valid(it->xd.reason))
        return it->xd.reason;
    return "dead_lettered";
}

/* A worker rejects a held dispatch whose start deadline passed instead of starting it. */
static bool deadline_passed(const dlq_item_t *it)
{
    return !strcmp(broker_reason(it), "rejected") && it->disp.start_deadline_us > 0 &&
           it->disp.start_deadline_us < now_wall_ms() * 1000;
}

/* The failed execution's result: what happened, where, and the broker's own record. */
static char *failure_result(const dlq_item_t *it, const char *error)
{
    const char *reason = it->queue_timeout ? "queue_timeout" : NULL;
    char when[TS_TEXT_MAX], message[600];
    ts_format(it->xd.time_s ? it->xd.time_s * 1000000 : now_wall_ms() * 1000, when, sizeof when);
    const char *queue = it->xd.queue[0] ? it->xd.queue : "its worker queue";
    char deadline[TS_TEXT_MAX];
    ts_format(it->disp.start_deadline_us, deadline, sizeof deadline);
    if (it->queue_timeout)
        snprintf(message, sizeof message,
                 "The dispatch to worker %s waited in %s past the execution's queue deadline "
                 "(queue_timeout_s) without being consumed; it expired and the broker "
                 "dead-lettered it.",
                 it->disp.worker_id, queue);
    else if (!strcmp(broker_reason(it), "expired"))
        snprintf(message, sizeof message,
                 "The dispatch to worker %s waited in %s longer than the queue's TTL without being "
                 "consumed (is the worker running?); the broker dead-lettered it.",
                 it->disp.worker_id, queue);
    else if (deadline_passed(it))
        snprintf(message, sizeof message,
                 "Worker %s held the dispatch past its start deadline (%s) without starting it "
                 "and rejected it from %s.",
                 it->disp.worker_id, deadline, queue);
    else
        snprintf(message, sizeof message,
                 "The broker dead-lettered the dispatch to worker %s "
                 "from %s (reason: %s).",
                 it->disp.worker_id, queue, broker_reason(it));
    json_object *r = json_object_new_object();
    json_object_object_add(r, "error", json_object_new_string(error));
    if (reason)
        json_object_object_add(r, "reason", json_object_new_string(reason));
    json_object_object_add(r, "message", json_object_new_string(message));
    json_object_object_add(r, "worker", json_object_new_string(it->disp.worker_id));
    json_object_object_add(r, "attempt", json_object_new_int(it->disp.attempt));
    json_object_object_add(
        r, !strcmp(broker_reason(it), "expired") ? "expired_at" : "dead_lettered_at",
        json_object_new_string(when));
    json_object_object_add(r, "x_death", hdr_x_death_json(&it->in.d->headers));
    char *text = strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
    json_object_put(r);
    return text;
}

static const char *failure_error(const dlq_item_t *it)
{
    if (it->queue_timeout)
        return QUEUE_TIMEOUT_ERROR;
    if (deadline_passed(it))
        return START_DEADLINE_ERROR;
    return !strcmp(broker_reason(it), "expired") ? TTL_EXPIRED_ERROR
                                                 : "Dispatch dead-lettered by the broker";
}

/* The executions the batch names, locked for the rest of the transaction. */
static int load_rows(PGconn *db, dlq_item_t *items, size_t n, PGresult **out, char *err,
                     size_t errlen)
{
    pgarr_t ids;
    pgarr_init(&ids);
    for (size_t i = 0; i < n; i++)
        if (items[i].needs_row)
            pgarr_add_int(&ids, items[i].disp.execution_id);
    const char *params[] = {pgarr_text(&ids)};
    int rc = params[0] ? db_exec(db,
                                 "SELECT id, status, attempt, row_to_json(e)::text,"
                                 " (e.queue_timeout_s IS NOT NULL AND e.due_at + make_interval(secs"
                                 " => e.queue_timeout_s) <= now())::int FROM executions e"
                                 " WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
                                 1, params, out, err, errlen)
                       : -1;
    if (!params[0])
        snprintf(err, errlen, "out of memory");
    pgarr_free(&ids);
    return rc;
}

static int find_row(PGresult *rows, int64_t id)
{
    for (int r = 0; r < PQntuples(rows); r++)
        if (strtoll(PQgetvalue(rows, r, 0), NULL, 10) == id)
            return r;
    return -1;
}

/* Decide each dispatch against its row. Several dead letters for one execution in a batch
 * are decided in order against the row as the earlier ones left it. */
static void decide(dlq_item_t *items, size_t n, PGresult *rows, char (*status)[16])
{
    for (int r = 0; r < PQntuples(rows); r++)
        snprintf(status[r], 16, "%s", PQgetvalue(rows, r, 1));
    for (size_t i = 0; i < n; i++) {
        dlq_item_t *it = &items[i];
        if (!it->needs_row)
            continue;
        int r = find_row(rows, it->disp.execution_id);
        exec_status_t st;
        if (r < 0) {
            inmsg_reject(&it->in, "execution_missing", "execution %" PRId64 " does not exist",
                         it->disp.execution_id);
            continue;
        }
        it->snapshot = strdup(PQgetvalue(rows, r, 3));
        int attempt = atoi(PQgetvalue(rows, r, 2));
        if (trans_status_parse(status[r], &st) != 0 || trans_is_terminal(st)) {
            inmsg_reject(&it->in, "execution_terminal", "the execution is already %s", status[r]);
        } else if (attempt != it->disp.attempt) {
            inmsg_reject(&it->in, "stale_attempt",
                         "dispatch of attempt %d; the execution is on attempt %d", it->disp.attempt,
                         attempt);
        } else if (st == EXEC_REQUESTED) {
            /* That attempt ended and was retried (a copy of a dead letter handled already,
             * redelivered): the next dispatch is a new attempt, which this must not fail. */
            inmsg_reject(&it->in, "stale_attempt",
                         "dispatch of attempt %d; that attempt ended and the execution is "
                         "requested again (a retry)",
                         it->disp.attempt);
        } else if (st == EXEC_RUNNING || st == EXEC_CANCELING) {
            /* The worker already reported this attempt running, so this is a leftover copy
             * of the dispatch (ack lost, requeued, expired): failing would kill healthy work.
             * A worker that really died is caught by the timeout monitor. */
            inmsg_reject(&it->in, "execution_started", "the execution is already %s on attempt %d",
                         status[r], attempt);
        } else if (!trans_legal(st, EXEC_FAILED)) {
            inmsg_reject(&it->in, "status_conflict",
                         "the execution is %s, which cannot become failed", status[r]);
        } else {
            /* An expiry past the execution's queue deadline is the deadline's doing, whether
             * the dispatch's own expiration or the queue's TTL came first. */
            it->queue_timeout = !strcmp(broker_reason(it), "expired") &&
                                atoi(PQgetvalue(rows, r, 4)) == 1;
            snprintf(it->in.reason, sizeof it->in.reason, "%s",
                     it->queue_timeout ? "queue_timeout" : broker_reason(it));
            it->fail_execution = true;
            snprintf(it->expected_status, sizeof it->expected_status, "%s", status[r]);
            snprintf(status[r], 16, "failed");
            it->result = failure_result(it, failure_error(it));
        }
    }
}

/* One CAS for every execution the batch fails, fenced by status and attempt. */
static int fail_executions(PGconn *db, dlq_item_t *items, size_t n, executor_stats_t *st, char *err,
                           size_t errlen)
{
    pgarr_t a[5];
    for (int k = 0; k < 5; k++)
        pgarr_init(&a[k]);
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        if (!items[i].fail_execution)
            continue;
        pgarr_add_int(&a[0], items[i].disp.execution_id);
        pgarr_add_int(&a[1], items[i].disp.attempt);
        pgarr_add(&a[2], items[i].expected_status);
        pgarr_add(&a[3], failure_error(&items[i]));
        pgarr_add(&a[4], items[i].result);
        want++;
    }
    char sources[256];
    int rc = 0;
    if (want > 0) {
        PGresult *res = NULL;
        const char *params[6] = {pgarr_text(&a[0]), pgarr_text(&a[1]), pgarr_text(&a[2]),
                                 pgarr_text(&a[3]), pgarr_text(&a[4]), sources};
        rc = trans_sources_literal(EXEC_FAILED, sources, sizeof sources);
        for (int k = 0; k < 5 && rc == 0; k++)
            if (!params[k])
                rc = -1;
        /* clang-format off */
        if (rc == 0)
            rc = db_exec(db,
                         "UPDATE executions e SET status = " EXEC_SQL(FAILED) ", error = u.error,"
                         " result = u.result::jsonb, wait_reason = NULL"
                         " FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[])"
                         " AS u(id, attempt, expected, error, result)"
                         " WHERE e.id = u.id AND e.attempt = u.attempt AND e.status = u.expected"
                         " AND e.status = ANY($6::text[]) RETURNING e.id",
                         6, params, &res, err, errlen);
        else
            snprintf(err, errlen, "out of memory");
        /* clang-format on */
        if (rc == 0)
            st->dlq_failed_executions += (uint64_t)PQntuples(res);
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (items[i].fail_execution && items[i].queue_timeout)
                st->queue_timeouts++;
        PQclear(res);
    }
    for (int k = 0; k < 5; k++)
        pgarr_free(&a[k]);
    return rc;
}

/* The attempts the batch failed: recorded with the broker's x-death of every hop, and retried
 * when their policy says so. An expiry (or a start deadline passed in a worker's queue) lost the
 * worker, not the handler: worker_lost; an expiry also makes the worker suspect, so a retry goes
 * to another one. */
static int end_attempts(PGconn *db, dlq_item_t *items, size_t n, executor_stats_t *st, char *err,
                        size_t errlen)
{
    attempt_end_t *ends = calloc(n + 1, sizeof *ends);
    char **xd = calloc(n + 1, sizeof *xd);
    size_t k = 0;
    int rc = -1;
    if (!ends || !xd) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        dlq_item_t *it = &items[i];
        if (!it->fail_execution)
            continue;
        /* A queue timeout is the execution's deadline, not a lost worker: failed, retried only
         * when its policy retries failed (its next deadline counts from the retry's due time). */
        bool expired = !strcmp(broker_reason(it), "expired") && !it->queue_timeout;
        json_object *x = hdr_x_death_json(&it->in.d->headers);
        xd[k] = x ? strdup(json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN)) : NULL;
        json_object_put(x);
        ends[k] = (attempt_end_t){.id = it->disp.execution_id,
                                  .attempt = it->disp.attempt,
                                  .status = "failed",
                                  .outcome = expired || deadline_passed(it) ? OUTCOME_WORKER_LOST
                                                                            : OUTCOME_FAILED,
                                  .error = failure_error(it),
                                  .x_death = xd[k],
                                  .lost_worker = expired ? it->disp.worker_id : NULL};
        k++;
    }
    rc = attempts_end(db, ends, k, st, err, errlen);
out:
    for (size_t i = 0; xd && i < k; i++)
        free(xd[i]);
    free(xd);
    free(ends);
    return rc;
}

static void build_record(dl_record_t *rec, dlq_item_t *it, const char *queue)
{
    dlrec_from_delivery(rec, it->in.d, &it->xd, it->headers, queue);
    rec->reason = it->in.reason;
    rec->error = it->in.error[0] ? it->in.error : NULL;
    if (it->parked) {
        snprintf(it->note, sizeof it->note,
                 "it outlived the retention of %.200s and was recorded from %.200s%s%.200s",
                 it->parking.queue, queue, rec->error ? "; " : "", rec->error ? rec->error : "");
        rec->error = it->note;
    }
    rec->snapshot = it->snapshot;
    rec->x_death_verified = x_death_verified(it);
    dlrec_from_envelope(rec, it->in.env_ok ? &it->in.env : NULL);
    if (it->needs_row || it->in.has_execution_id) {
        rec->has_execution_id = true;
        rec->execution_id = it->disp.execution_id;
    }
}

static int dlq_work(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    dlq_item_t *items = b->items;
    PGresult *rows = NULL;
    if (load_rows(db, items, b->n, &rows, err, errlen) != 0)
        return -1;
    char(*status)[16] = calloc((size_t)PQntuples(rows) + 1, sizeof *status);
    dl_record_t *recs = calloc(b->n, sizeof *recs);
    int rc = -1;
    if (status && recs) {
        decide(items, b->n, rows, status);
        for (size_t i = 0; i < b->n; i++)
            build_record(&recs[i], &items[i], b->queue);
        rc = fail_executions(db, items, b->n, &b->counts, err, errlen);
        if (rc == 0)
            rc = end_attempts(db, items, b->n, &b->counts, err, errlen);
        int64_t *occ = rc == 0 ? calloc(b->n + 1, sizeof *occ) : NULL;
        if (rc == 0 && !occ)
            rc = (snprintf(err, errlen, "out of memory"), -1);
        if (rc == 0)
            rc = dlstore_insert_folding(db, recs, b->n, occ, &b->counts, err, errlen);
        for (size_t i = 0; rc == 0 && i < b->n; i++)
            items[i].in.occurrences = occ[i];
        free(occ);
        /* How long dead letters wait before they are recorded (the stats line shows it). */
        for (size_t i = 0; rc == 0 && i < b->n; i++) {
            int64_t age = dlq_age_s(items[i].in.d, now_wall_ms() / 1000);
            if ((uint64_t)age > b->counts.dead_letter_age_s)
                b->counts.dead_letter_age_s = (uint64_t)age;
        }
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(status);
    free(recs);
    PQclear(rows);
    return rc;
}

static void dlq_parse(void *item, const mq_delivery_t *d, const char *queue)
{
    (void)queue;
    dlq_item_t *it = item;
    hdr_first_death(&d->headers, &it->xd);
    it->headers = hdr_to_json(&d->headers);
    classify(it, d);
}

/* From the parking queue: the most recent x-death entry is its expiry from the dead-letter
 * queue, and the one before it the dead-lettering that brought it there, which decides (and
 * names its record, so a copy recorded from the dead-letter queue is the same row). */
static void parked_parse(void *item, const mq_delivery_t *d, const char *queue)
{
    dlq_item_t *it = item;
    xdeath_t origin;
    hdr_death_at(&d->headers, 0, &it->parking);
    hdr_death_at(&d->headers, 1, &origin);
    if (!it->parking.present || strcmp(it->parking.reason, "expired") != 0 || !origin.present) {
        dlq_parse(item, d, queue); /* it came some other way: an ordinary dead letter */
        return;
    }
    it->parked = true;
    it->xd = origin;
    it->headers = hdr_to_json(&d->headers);
    classify(it, d);
}

int64_t dlq_age_s(const mq_delivery_t *d, int64_t now_s)
{
    xdeath_t first, parked;
    hdr_death_at(&d->headers, 0, &first);
    hdr_death_at(&d->headers, 1, &parked);
    int64_t since = parked.present && parked.time_s > 0 ? parked.time_s : first.time_s;
    return since > 0 && now_s > since ? now_s - since : 0;
}

/* The oldest dead letter c holds unacked, in seconds. */
static uint64_t held_age_s(const consumer_t *c, int64_t now_s)
{
    uint64_t oldest = 0;
    for (size_t i = 0; i < c->n; i++) {
        uint64_t age = (uint64_t)dlq_age_s(c->batch[i], now_s);
        oldest = age > oldest ? age : oldest;
    }
    return oldest;
}

uint64_t dlq_held_age_s(const consumer_t *dlq, const consumer_t *parked)
{
    int64_t now_s = now_wall_ms() / 1000;
    uint64_t held = held_age_s(dlq, now_s), in_parking = held_age_s(parked, now_s);
    return in_parking > held ? in_parking : held;
}

static void log_item(const void *item, const char *queue)
{
    (void)queue;
    const dlq_item_t *it = item;
    char id[24] = "", occ[24];
    if (it->needs_row)
        snprintf(id, sizeof id, "%" PRId64, it->disp.execution_id);
    if (it->parked) {
        char age[24];
        snprintf(age, sizeof age, "%" PRId64, dlq_age_s(it->in.d, now_wall_ms() / 1000));
        log_kv(LOG_WARN,
               "a dead letter outlived the dead-letter queue's retention; recorded from the "
               "parking queue",
               "execution_id", id, "queue", queue, "from", it->parking.queue, "age_s", age, NULL);
    }
    if (it->fail_execution)
        log_kv(LOG_INFO, "execution failed: its dispatch was dead-lettered", "execution_id", id,
               "worker", it->disp.worker_id, "queue", it->xd.queue, "reason", it->in.reason, NULL);
    else if (it->in.occurrences > 0) /* 0: folded into another's record, which says so */
        log_kv(LOG_WARN, "dead letter stored", "reason", it->in.reason, "execution_id", id, "queue",
               it->xd.queue, "error", it->in.error, "occurrences",
               inmsg_occurrences(&it->in, occ, sizeof occ), NULL);
}

static void dlq_free(void *item)
{
    dlq_item_t *it = item;
    free(it->snapshot);
    free(it->result);
    inmsg_close(&it->in);
    json_object_put(it->headers);
}

const consumer_handler_t dlq_handler = {.what = "storing dead letters",
                                        .item_size = sizeof(dlq_item_t),
                                        .parse = dlq_parse,
                                        .work = dlq_work,
                                        .log_item = log_item,
                                        .free_item = dlq_free};

const consumer_handler_t dlq_parked_handler = {.what = "storing parked dead letters",
                                               .item_size = sizeof(dlq_item_t),
                                               .parse = parked_parse,
                                               .work = dlq_work,
                                               .log_item = log_item,
                                               .free_item = dlq_free};

/* Nothing derived from the content: only what the database cannot refuse. */
static void raw_parse(void *item, const mq_delivery_t *d, const char *queue)
{
    dlrec_raw(item, d, queue);
}

static int raw_work(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    return dlstore_insert(db, b->items, b->n, &b->counts, err, errlen);
}

const consumer_handler_t dlq_raw_handler = {.what = "storing a message raw",
                                            .item_size = sizeof(dl_record_t),
                                            .parse = raw_parse,
                                            .work = raw_work};
