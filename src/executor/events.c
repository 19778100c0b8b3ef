/*
 * Reliable events (docs/dead-letters.md, "Events"; docs/api.md, "Completion events"). Every
 * events.interval_ms the emitter reads what is not yet announced, a batch at a time, from two
 * sources: dead-letter records not yet emitted (schema 023: emitted_at IS NULL), each an
 * ExecutionDeadLettered event with events.dead_lettered_routing_key, and the outbox of ended
 * executions (schema 037), each an ExecutionEnded event with routing key
 * "<events.ended_routing_key_prefix>.<status>.<action_ref>" (an end already superseded when it
 * is read, by a retry decided in the same transaction or a late completion, is deleted
 * unannounced: its execution goes on). Each is published, confirmed, to
 * events.exchange; confirmed records are marked emitted, confirmed outbox rows deleted. A failed
 * publish leaves its rows, is counted, and the emitter waits events.retry_initial_ms, doubling
 * to events.retry_max_ms, before it tries again: the same sweep is the reconciler, which
 * publishes everything left once the broker is back. The envelope's message_id is the row's
 * event_id, which never changes, so consumers deduplicate the at-least-once stream on it (two
 * executors may publish one row twice). With events.enabled off nothing is published and the
 * outbox is emptied as it fills (counted as dropped).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/events.h"
#include "executor/pgtext.h"
#include "warren/db.h"
#include "warren/envelope.h"
#include "warren/evloop.h"
#include "warren/log.h"
#include "warren/topology.h"

#define EVENTS_ROUNDS 10
/* AMQP's limit on a routing key (a shortstr). */
#define ROUTING_KEY_MAX 255

/* Where events come from. read_sql ($1 limit, $2 the ended prefix) returns: the row's key (for
 * done_sql, which takes the confirmed keys as $1, a bigint[]), event_id, execution_id (or
 * NULL), the payload's JSON text, and the routing key (NULL: events.dead_lettered_routing_key). */
typedef struct source {
    const char *what; /* for logs */
    msg_type_t type;
    const char *read_sql;
    int read_params; /* 1 or 2 */
    const char *done_sql;
    const char *failed_msg, *again_msg; /* the log lines of a failure and of the recovery */
} source_t;

static const source_t dead_lettered = {
    "dead-letter events",
    MSG_EXECUTION_DEAD_LETTERED,
    "SELECT d.id, d.event_id, d.execution_id, warren_dl_event(d)::text, NULL::text"
    " FROM dead_letters d WHERE d.emitted_at IS NULL ORDER BY d.id LIMIT $1",
    1,
    "UPDATE dead_letters SET emitted_at = now() WHERE id = ANY($1::bigint[])"
    " AND emitted_at IS NULL",
    "dead-letter events not published; the records stay unemitted",
    "dead-letter events published again",
};

static const source_t ended = {
    "execution-ended events",
    MSG_EXECUTION_ENDED,
    "WITH b AS (SELECT o.*, coalesce(e.status = o.status AND e.attempt = o.attempt, false)"
    "   AS current FROM execution_ended_events o LEFT JOIN executions e ON e.id = o.execution_id"
    "   ORDER BY o.id LIMIT $1),"
    " superseded AS (DELETE FROM execution_ended_events x USING b"
    "   WHERE x.id = b.id AND NOT b.current)"
    " SELECT b.id, md5('warren-ended-' || b.id)::uuid, b.execution_id,"
    " jsonb_build_object('execution_id', b.execution_id, 'status', b.status,"
    "   'attempt', b.attempt, 'action_ref', b.action_ref, 'worker', b.worker,"
    "   'result_bytes', b.result_bytes, 'error', b.error, 'created_at', b.created_at,"
    "   'started_at', b.started_at, 'ended_at', b.ended_at,"
    "   'traceparent', warren_traceparent(b.execution_id, b.traceparent))::text,"
    " $2::text || '.' || b.status || '.' || b.action_ref"
    " FROM b WHERE b.current ORDER BY b.id",
    2,
    "DELETE FROM execution_ended_events WHERE id = ANY($1::bigint[])",
    "execution-ended events not published; they stay in the outbox",
    "execution-ended events published again",
};

typedef struct read_work {
    const source_t *src;
    const char *limit, *prefix;
    PGresult *res;
} read_work_t;

static int read_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    read_work_t *w = arg;
    const char *p[] = {w->limit, w->prefix};
    return db_exec(db, w->src->read_sql, w->src->read_params, p, &w->res, err, errlen);
}

typedef struct done_work {
    const source_t *src;
    const char *ids;
} done_work_t;

static int done_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    done_work_t *w = arg;
    const char *p[] = {w->ids};
    return db_exec(db, w->src->done_sql, 1, p, NULL, err, errlen);
}

/* The routing key of row i: column 4, cut to AMQP's limit at a character's start. */
static void routing_key(const events_t *e, PGresult *res, int i, char *key, size_t len)
{
    if (PQgetisnull(res, i, 4)) {
        snprintf(key, len, "%s", e->cfg->events.dead_lettered_key);
        return;
    }
    const char *full = PQgetvalue(res, i, 4);
    snprintf(key, len, "%s", full);
    /* Cut: while the first byte left out continues a character, leave out that character. */
    for (size_t n = strlen(key); n > 0 && ((unsigned char)full[n] & 0xC0) == 0x80;)
        key[--n] = '\0';
}

/* Publish the rows of res; the keys confirmed go into ok. Returns the first failure or MQ_OK. */
static int publish(events_t *e, const source_t *src, PGresult *res, pgarr_t *ok)
{
    int n = PQntuples(res);
    mq_message_t *msgs = calloc((size_t)n, sizeof *msgs);
    char **bodies = calloc((size_t)n, sizeof *bodies);
    char(*keys)[ROUTING_KEY_MAX + 1] = calloc((size_t)n, sizeof *keys);
    int *results = calloc((size_t)n, sizeof *results);
    int rc = MQ_ERR_CONNECTION;
    for (int i = 0; msgs && bodies && keys && results && i < n; i++) {
        results[i] = MQ_ERR_CONNECTION; /* until the broker says otherwise */
        json_object *payload = json_tokener_parse(PQgetvalue(res, i, 3));
        const char *exec_id = PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2);
        size_t len = 0;
        bodies[i] = envelope_encode(src->type, PQgetvalue(res, i, 1), exec_id, "executor", 0, NULL,
                                    payload, &len);
        routing_key(e, res, i, keys[i], sizeof keys[i]);
        msgs[i] = (mq_message_t){.exchange = e->cfg->events.exchange,
                                 .routing_key = keys[i],
                                 .body = bodies[i] ? bodies[i] : "{}",
                                 .body_len = bodies[i] ? len : 2,
                                 .message_id = PQgetvalue(res, i, 1),
                                 .correlation_id = exec_id,
                                 .type = msg_type_name(src->type),
                                 .execution_id = exec_id};
    }
    char err[ERRBUF_SIZE];
    /* The declare on the admin connection (never blocked by a resource alarm), the publish on
     * the publisher's. */
    if (msgs && bodies && keys && results) {
        if (topo_declare_events(e->admin, e->cfg->events.exchange, err, sizeof err) != 0)
            log_kv(LOG_WARN, "cannot declare the events exchange", "exchange",
                   e->cfg->events.exchange, "error", err, NULL);
        else
            rc = mq_publish_batch(e->pub, msgs, (size_t)n, results);
        for (int i = 0; i < n; i++) {
            bool sent = rc != MQ_ERR_CONNECTION && results[i] == MQ_OK && bodies[i];
            if (sent)
                pgarr_add(ok, PQgetvalue(res, i, 0));
            if (!sent && rc == MQ_OK)
                rc = results[i] != MQ_OK ? results[i] : MQ_ERR_CONNECTION;
        }
    }
    for (int i = 0; bodies && i < n; i++)
        free(bodies[i]);
    free(bodies);
    free(keys);
    free(msgs);
    free(results);
    return rc;
}

/* One batch of src: 1 when it was full (more may wait), 0 when done, -1 after a failure.
 * send false (events.enabled off): the rows are done without a publish. */
static int emit_batch(events_t *e, const source_t *src, bool send, uint64_t *published,
                      uint64_t *failed)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", e->cfg->executor.batch_size);
    read_work_t w = {.src = src, .limit = limit, .prefix = e->cfg->events.ended_prefix};
    if (dbc_statement(e->db, src->what, read_fn, &w) != DBC_OK) {
        PQclear(w.res);
        return -1;
    }
    int n = PQntuples(w.res);
    if (n == 0) {
        PQclear(w.res);
        return 0;
    }
    pgarr_t ok;
    pgarr_init(&ok);
    int rc = MQ_OK;
    if (send)
        rc = publish(e, src, w.res, &ok);
    else
        for (int i = 0; i < n; i++)
            pgarr_add(&ok, PQgetvalue(w.res, i, 0));
    size_t sent = ok.n;
    done_work_t d = {.src = src, .ids = pgarr_text(&ok)};
    if (sent > 0 && d.ids)
        (void)dbc_statement(e->db, src->what, done_fn, &d);
    *published += sent;
    *failed += (uint64_t)n - sent;
    pgarr_free(&ok);
    PQclear(w.res);
    if (rc != MQ_OK) {
        int64_t wait_ms = backoff_next(&e->backoff, evloop_random());
        e->next_ms = now_mono_ms() + wait_ms;
        char nfailed[16], retry[24];
        snprintf(nfailed, sizeof nfailed, "%d", n - (int)sent);
        snprintf(retry, sizeof retry, "%" PRId64, wait_ms);
        log_kv(LOG_WARN, src->failed_msg, "failed", nfailed, "status", mq_status_name(rc),
               "retry_in_ms", retry, NULL);
        return -1;
    }
    if (send && e->backoff.attempt > 0) {
        log_kv(LOG_INFO, src->again_msg, NULL);
        backoff_reset(&e->backoff);
    }
    return n >= e->cfg->executor.batch_size ? 1 : 0;
}

void events_run(events_t *e)
{
    executor_stats_t *st = e->stats;
    if (!e->cfg->events.enabled) { /* nothing is announced: the outbox is emptied */
        uint64_t none = 0;
        for (int round = 0; round < EVENTS_ROUNDS &&
                            emit_batch(e, &ended, false, &st->ended_events_dropped, &none) == 1;
             round++)
            ;
        return;
    }
    if (now_mono_ms() < e->next_ms)
        return;
    int failures = e->backoff.attempt; /* the limits are reloadable, the count is not */
    backoff_init(&e->backoff, e->cfg->events.retry_initial_ms, e->cfg->events.retry_max_ms);
    e->backoff.attempt = failures;
    int rc = 0;
    for (int round = 0;
         round < EVENTS_ROUNDS &&
         (rc = emit_batch(e, &dead_lettered, true, &st->events_published, &st->events_failed)) == 1;
         round++)
        ;
    for (int round = 0; rc >= 0 && round < EVENTS_ROUNDS &&
                        (rc = emit_batch(e, &ended, true, &st->ended_events_published,
                                         &st->ended_events_failed)) == 1;
         round++)
        ;
}
