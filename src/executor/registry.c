/*
 * The worker registry: WorkerHeartbeat messages (announce, heartbeat, stopping) upserted into
 * workers, one statement per drained batch, the latest heartbeat per worker winning. Liveness
 * is not stored: readers compare last_heartbeat with the worker's own interval.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/dlstore.h"
#include "executor/identity.h"
#include "executor/inmsg.h"
#include "executor/monitor.h"
#include "executor/pgtext.h"
#include "executor/registry.h"
#include "warren/db.h"
#include "warren/envelope.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/signing.h"
#include "warren/timestamp.h"

#define MAX_CAPABILITIES 1024
#define MAX_TEXT 255
/* Executions abandoned per heartbeat batch for a restart; the monitor takes any rest. */
#define RESTARTED_LIMIT 1000

typedef struct heartbeat {
    inmsg_t in;                                      /* first: dlstore_unusable reads it */
    const char *worker_id, *status, *host, *version; /* borrowed from env; NULL when absent */
    const char *started_at;                          /* started_text, or NULL */
    char started_text[TS_TEXT_MAX];
    int64_t capacity, running, interval_s;
    pgarr_t capabilities;    /* the text[] literal */
    const char *incarnation; /* the process's, when well-formed; NULL: unknown */
    bool superseded;         /* a later heartbeat of the same worker is in the batch */
    bool registered;         /* the upsert inserted this worker: it is new */
    int abandoned;           /* executions of an older process of this worker abandoned */
} heartbeat_t;

static int parse_capabilities(heartbeat_t *h, const jf_t *p)
{
    json_object *caps;
    const char *name;
    if (jf_array(p, "capabilities", true, MAX_CAPABILITIES, &caps) < 0)
        return -1;
    for (size_t i = 0; i < json_object_array_length(caps); i++) {
        if (jf_string_at(p, "capabilities", i, MAX_TEXT, &name) < 0)
            return -1;
        pgarr_add(&h->capabilities, name);
    }
    return 0;
}

static int parse_fields(heartbeat_t *h, const jf_t *p)
{
    if (jf_string(p, "worker_id", true, WORKER_ID_MAX, &h->worker_id) < 0 ||
        jf_string(p, "status", false, 16, &h->status) < 0 ||
        jf_string(p, "host", false, MAX_TEXT, &h->host) < 0 ||
        jf_string(p, "version", false, MAX_TEXT, &h->version) < 0 ||
        jf_string(p, "started_at", false, TS_TEXT_MAX - 1, &h->started_at) < 0 ||
        jf_int(p, "capacity", true, 1, INT32_MAX, &h->capacity) < 0 ||
        jf_int(p, "running", false, 0, INT32_MAX, &h->running) < 0 ||
        jf_int(p, "heartbeat_interval_s", true, 1, 86400, &h->interval_s) < 0)
        return -1;
    if (!ids_worker_valid(h->worker_id)) {
        snprintf(p->err, p->errlen, "field 'payload.worker_id': '%s' is not a valid worker id",
                 h->worker_id);
        return -1;
    }
    /* An incarnation that is not the contract's 32 hex digits is left out, not refused: the
     * heartbeat still says the worker is alive (an unknown incarnation abandons nothing). */
    if (jf_string(p, "incarnation", false, INCARNATION_LEN, &h->incarnation) != 1 ||
        !ids_incarnation_valid(h->incarnation))
        h->incarnation = NULL;
    if (!h->status)
        h->status = "online";
    if (strcmp(h->status, "online") && strcmp(h->status, "stopping") &&
        strcmp(h->status, "offline")) {
        snprintf(p->err, p->errlen, "field 'payload.status' must be online, stopping or offline");
        return -1;
    }
    /* The database gets the instant in one spelling it reads the same way: the cast in SQL
     * cannot fail (one bad heartbeat must not sink the batch). */
    int64_t us;
    if (h->started_at && ts_parse(h->started_at, &us) != 0) {
        snprintf(p->err, p->errlen, "field 'payload.started_at' is not an RFC 3339 date-time");
        return -1;
    }
    if (h->started_at) {
        ts_format_us(us, h->started_text, sizeof h->started_text);
        h->started_at = h->started_text;
    }
    return parse_capabilities(h, p);
}

static int parse_heartbeat(heartbeat_t *h, const mq_delivery_t *d)
{
    char err[ERRBUF_SIZE];
    pgarr_init(&h->capabilities);
    if (inmsg_open(&h->in, d) != 0)
        return -1;
    if (h->in.env.type != MSG_WORKER_HEARTBEAT)
        return inmsg_reject(&h->in, "unknown_type",
                            "only WorkerHeartbeat belongs in the heartbeats queue");
    jf_t p = {h->in.env.payload, "payload", err, sizeof err};
    if (parse_fields(h, &p) != 0)
        return inmsg_reject(&h->in, "parse_error", "%s", err);
    if (ident_check_worker(d, h->worker_id, err, sizeof err) != 0)
        return inmsg_reject(&h->in, IDENT_REASON, "%s", err);
    return 0;
}

/* Latest per worker wins: earlier heartbeats of a worker in the same batch are superseded. */
static void mark_superseded(heartbeat_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; !h[i].in.reason[0] && j < n; j++)
            if (!h[j].in.reason[0] && !strcmp(h[i].worker_id, h[j].worker_id)) {
                h[i].superseded = true;
                break;
            }
}

/* clang-format off */
/* Two processes of one worker with incarnations: the one that started later is the newest,
 * whichever heartbeat comes last. Without incarnations the last heartbeat wins, as before. */
#define NEWEST_PROCESS                                                                          \
    "(EXCLUDED.incarnation IS NULL OR w.incarnation IS NULL OR EXCLUDED.started_at IS NULL"     \
    " OR w.started_at IS NULL OR EXCLUDED.started_at >= w.started_at)"
/* In id order, so concurrent upserts (and the scheduler's worker locks) never deadlock. */
static const char upsert_sql[] =
    "INSERT INTO workers AS w (id, capabilities, capacity, running, status, last_heartbeat,"
    " heartbeat_interval_s, started_at, host, version, incarnation) "
    "SELECT u.id, u.caps::text[], u.capacity, u.running, u.status, now(), u.interval_s,"
    " u.started_at::timestamptz, u.host, u.version, u.incarnation "
    "FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::int[], $7::text[],"
    " $8::text[], $9::text[], $10::text[]) AS u(id, caps, capacity, running, status, interval_s,"
    " started_at, host, version, incarnation) ORDER BY u.id "
    "ON CONFLICT (id) DO UPDATE SET capabilities = EXCLUDED.capabilities,"
    " capacity = EXCLUDED.capacity, running = EXCLUDED.running, status = EXCLUDED.status,"
    " last_heartbeat = now(), heartbeat_interval_s = EXCLUDED.heartbeat_interval_s,"
    " started_at = CASE WHEN " NEWEST_PROCESS " THEN coalesce(EXCLUDED.started_at, w.started_at)"
    "   ELSE w.started_at END,"
    " incarnation = CASE WHEN " NEWEST_PROCESS " THEN EXCLUDED.incarnation ELSE w.incarnation END,"
    " host = coalesce(EXCLUDED.host, w.host), version = coalesce(EXCLUDED.version, w.version) "
    "RETURNING w.id, (xmax = 0)::int";
/* clang-format on */

enum {
    U_ID,
    U_CAPS,
    U_CAPACITY,
    U_RUNNING,
    U_STATUS,
    U_INTERVAL,
    U_STARTED,
    U_HOST,
    U_VERSION,
    U_INCARNATION,
    U_COUNT
};

/* Mark the heartbeats whose worker the upsert inserted (RETURNING id, inserted). */
static void mark_registered(heartbeat_t *h, size_t n, PGresult *upserted)
{
    for (int r = 0; r < PQntuples(upserted); r++) {
        if (atoi(PQgetvalue(upserted, r, 1)) != 1)
            continue;
        for (size_t i = 0; i < n; i++)
            if (!h[i].in.reason[0] && !h[i].superseded &&
                !strcmp(h[i].worker_id, PQgetvalue(upserted, r, 0)))
                h[i].registered = true;
    }
}

static int upsert(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    pgarr_t a[U_COUNT];
    size_t k = 0;
    for (int i = 0; i < U_COUNT; i++)
        pgarr_init(&a[i]);
    heartbeat_t *hs = b->items;
    PGresult *upserted = NULL;
    for (size_t i = 0; i < b->n; i++) {
        heartbeat_t *h = &hs[i];
        if (h->in.reason[0] || h->superseded)
            continue;
        pgarr_add(&a[U_ID], h->worker_id);
        pgarr_add(&a[U_CAPS], pgarr_text(&h->capabilities));
        pgarr_add_int(&a[U_CAPACITY], h->capacity);
        pgarr_add_int(&a[U_RUNNING], h->running);
        pgarr_add(&a[U_STATUS], h->status);
        pgarr_add_int(&a[U_INTERVAL], h->interval_s);
        pgarr_add(&a[U_STARTED], h->started_at);
        pgarr_add(&a[U_HOST], h->host);
        pgarr_add(&a[U_VERSION], h->version);
        pgarr_add(&a[U_INCARNATION], h->incarnation);
        k++;
    }
    const char *params[U_COUNT];
    int rc = 0;
    for (int i = 0; i < U_COUNT; i++)
        if (!(params[i] = pgarr_text(&a[i])))
            rc = -1;
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    else if (k > 0)
        rc = db_exec(db, upsert_sql, U_COUNT, params, &upserted, err, errlen);
    if (rc == 0) {
        mark_registered(hs, b->n, upserted);
        b->counts.heartbeats += k;
    }
    PQclear(upserted);
    for (int i = 0; i < U_COUNT; i++)
        pgarr_free(&a[i]);
    return rc;
}

/* Rows changed by monitor_restarted: (id, worker, dead letter written). */
static void count_restarted(consumer_batch_t *b, PGresult *changed)
{
    heartbeat_t *hs = b->items;
    for (int r = 0; r < PQntuples(changed); r++) {
        const char *worker = PQgetvalue(changed, r, 1);
        b->counts.abandoned_restarted++;
        if (atoi(PQgetvalue(changed, r, 2)) == 1)
            stats_dead_letter(&b->counts, "worker_restarted", 1);
        for (size_t i = 0; i < b->n; i++)
            if (!hs[i].in.reason[0] && !hs[i].superseded && !strcmp(hs[i].worker_id, worker))
                hs[i].abandoned++;
    }
}

/* A worker restarted under the same name heartbeats online at once: what its older process was
 * running is abandoned as soon as the newer one is heard, in the same transaction. */
static int abandon_restarted(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    heartbeat_t *hs = b->items;
    pgarr_t ids;
    pgarr_init(&ids);
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++)
        if (!hs[i].in.reason[0] && !hs[i].superseded && hs[i].incarnation) {
            pgarr_add(&ids, hs[i].worker_id);
            k++;
        }
    const char *workers = pgarr_text(&ids);
    PGresult *changed = NULL;
    int rc = 0;
    if (!workers) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (k > 0 &&
               (rc = monitor_restarted(db, workers, RESTARTED_LIMIT, &changed, err, errlen)) == 0) {
        count_restarted(b, changed);
        rc = monitor_end_attempts(db, changed, OUTCOME_WORKER_LOST, false, &b->counts, err, errlen);
    }
    PQclear(changed);
    pgarr_free(&ids);
    return rc;
}

/* clang-format off */
/* The heartbeats of a process older than the one the registry knows for that worker: both
 * name an incarnation and a start, they differ, and this one started earlier. */
static const char older_process_sql[] =
    "SELECT u.ord, w.incarnation FROM unnest($1::text[], $2::text[], $3::text[])"
    "   WITH ORDINALITY AS u(id, incarnation, started_at, ord)"
    " JOIN workers w ON w.id = u.id"
    " WHERE u.incarnation IS NOT NULL AND w.incarnation IS NOT NULL"
    "   AND u.incarnation <> w.incarnation AND u.started_at IS NOT NULL"
    "   AND w.started_at IS NOT NULL AND u.started_at::timestamptz < w.started_at";
/* clang-format on */

/*
 * A heartbeat of a process the registry has already seen replaced (a newer incarnation of the
 * same worker registered since) speaks for no live worker the executor knows: an older process
 * still running beside its successor, or a forgery. It must not change the worker's row (an
 * "offline" from it would take the live process out of the schedule), and it must leave a
 * trace: a dead letter, reason superseded_incarnation.
 */
static int refuse_older_processes(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    heartbeat_t *hs = b->items;
    pgarr_t a[3];
    size_t *index = calloc(b->n + 1, sizeof *index), k = 0;
    for (int i = 0; i < 3; i++)
        pgarr_init(&a[i]);
    for (size_t i = 0; index && i < b->n; i++)
        if (!hs[i].in.reason[0] && hs[i].incarnation && hs[i].started_at) {
            pgarr_add(&a[0], hs[i].worker_id);
            pgarr_add(&a[1], hs[i].incarnation);
            pgarr_add(&a[2], hs[i].started_at);
            index[k++] = i;
        }
    const char *params[3] = {pgarr_text(&a[0]), pgarr_text(&a[1]), pgarr_text(&a[2])};
    PGresult *res = NULL;
    int rc = 0;
    if (!index || !params[0] || !params[1] || !params[2]) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (k > 0) {
        rc = db_exec(db, older_process_sql, 3, params, &res, err, errlen);
    }
    for (int r = 0; rc == 0 && res && r < PQntuples(res); r++) {
        long ord = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (ord < 1 || (size_t)ord > k)
            continue;
        heartbeat_t *h = &hs[index[ord - 1]];
        inmsg_reject(&h->in, "superseded_incarnation",
                     "a heartbeat of worker '%s' from process '%s', which started before the "
                     "registered process '%s': an older process still running, or a forgery",
                     h->worker_id, h->incarnation, PQgetvalue(res, r, 1));
    }
    PQclear(res);
    free(index);
    for (int i = 0; i < 3; i++)
        pgarr_free(&a[i]);
    return rc;
}

static int registry_work(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    if (refuse_older_processes(db, b, err, errlen) != 0)
        return -1;
    mark_superseded(b->items, b->n);
    if (dlstore_unusable(db, b->items, b->n, sizeof(heartbeat_t), b->queue, &b->counts, err,
                         errlen) != 0 ||
        upsert(db, b, err, errlen) != 0)
        return -1;
    return abandon_restarted(db, b, err, errlen);
}

static void registry_parse(void *item, const mq_delivery_t *d, const char *queue)
{
    (void)queue;
    heartbeat_t *h = item;
    char err[ERRBUF_SIZE];
    (void)parse_heartbeat(h, d);
    if (sign_check(d, err, sizeof err) != 0) { /* recorded; the workers row is untouched */
        h->in.d = d;
        inmsg_reject(&h->in, SIGN_REASON, "%s", err);
    }
}

static void log_heartbeat(const void *item, const char *queue)
{
    const heartbeat_t *h = item;
    char occ[24];
    if (h->in.reason[0] && h->in.occurrences == 0)
        return; /* folded into an earlier message's record, whose line counts it */
    inmsg_occurrences(&h->in, occ, sizeof occ);
    if (!strcmp(h->in.reason, SIGN_REASON)) {
        log_kv(LOG_WARN, "heartbeat refused: its signature does not verify", "worker", h->worker_id,
               "error", h->in.error, "occurrences", occ, NULL);
        return;
    }
    if (!strcmp(h->in.reason, "superseded_incarnation")) {
        log_kv(LOG_WARN, "heartbeat of a replaced worker process: recorded, not applied", "worker",
               h->worker_id, "incarnation", h->incarnation, "error", h->in.error, "occurrences",
               occ, NULL);
        return;
    }
    if (h->in.reason[0]) {
        log_kv(LOG_WARN, "unreadable heartbeat stored as a dead letter", "reason", h->in.reason,
               "error", h->in.error, "queue", queue, "occurrences", occ, NULL);
        return;
    }
    if (h->registered)
        log_kv(LOG_INFO, "new worker registered", "worker", h->worker_id, NULL);
    if (h->abandoned > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", h->abandoned);
        log_kv(LOG_WARN, "worker restarted: its older process's executions abandoned", "worker",
               h->worker_id, "incarnation", h->incarnation, "abandoned", n, NULL);
    }
    if (!h->superseded && strcmp(h->status, "online") != 0)
        log_kv(LOG_INFO, "worker status", "worker", h->worker_id, "status", h->status, NULL);
}

static void registry_free(void *item)
{
    heartbeat_t *h = item;
    pgarr_free(&h->capabilities);
    inmsg_close(&h->in);
}

const consumer_handler_t registry_handler = {.what = "recording heartbeats",
                                             .item_size = sizeof(heartbeat_t),
                                             .parse = registry_parse,
                                             .work = registry_work,
                                             .log_item = log_heartbeat,
                                             .free_item = registry_free};
