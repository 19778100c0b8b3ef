/*
 * Reliable dead-letter events (docs/dead-letters.md, "Events"). Every events.interval_ms the
 * emitter reads the records not yet emitted (schema 023: emitted_at IS NULL, oldest first, a
 * batch at a time), publishes one ExecutionDeadLettered event each, confirmed, to
 * events.exchange with events.dead_lettered_routing_key, and marks the confirmed ones emitted.
 * A failed publish leaves its records unemitted, is counted, and the emitter waits
 * events.retry_initial_ms, doubling to events.retry_max_ms, before it tries again: the same
 * sweep is the reconciler, which publishes every unemitted record once the broker is back.
 * The envelope's message_id is the record's event_id, which never changes, so consumers
 * deduplicate the at-least-once stream on it (two executors may publish one record twice).
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

typedef struct read_work {
    const char *limit;
    PGresult *res;
} read_work_t;

static int read_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    read_work_t *w = arg;
    const char *p[] = {w->limit};
    return db_exec(db,
                   "SELECT d.id, d.event_id, d.execution_id, warren_dl_event(d)::text"
                   " FROM dead_letters d WHERE d.emitted_at IS NULL ORDER BY d.id LIMIT $1",
                   1, p, &w->res, err, errlen);
}

static int mark_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    const char *p[] = {arg};
    return db_exec(db,
                   "UPDATE dead_letters SET emitted_at = now() WHERE id = ANY($1::bigint[])"
                   " AND emitted_at IS NULL",
                   1, p, NULL, err, errlen);
}

/* Publish the rows of res; the ids confirmed go into ok. Returns the first failure or MQ_OK. */
static int publish(events_t *e, PGresult *res, pgarr_t *ok)
{
    int n = PQntuples(res);
    mq_message_t *msgs = calloc((size_t)n, sizeof *msgs);
    char **bodies = calloc((size_t)n, sizeof *bodies);
    int *results = calloc((size_t)n, sizeof *results);
    int rc = MQ_ERR_CONNECTION;
    for (int i = 0; msgs && bodies && results && i < n; i++) {
        results[i] = MQ_ERR_CONNECTION; /* until the broker says otherwise */
        json_object *payload = json_tokener_parse(PQgetvalue(res, i, 3));
        const char *exec_id = PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2);
        size_t len = 0;
        bodies[i] = envelope_encode(MSG_EXECUTION_DEAD_LETTERED, PQgetvalue(res, i, 1), exec_id,
                                    "executor", 0, NULL, payload, &len);
        msgs[i] = (mq_message_t){.exchange = e->cfg->events.exchange,
                                 .routing_key = e->cfg->events.dead_lettered_key,
                                 .body = bodies[i] ? bodies[i] : "{}",
                                 .body_len = bodies[i] ? len : 2,
                                 .message_id = PQgetvalue(res, i, 1),
                                 .correlation_id = exec_id,
                                 .type = msg_type_name(MSG_EXECUTION_DEAD_LETTERED),
                                 .execution_id = exec_id};
    }
    char err[ERRBUF_SIZE];
    /* The declare on the admin connection (never blocked by a resource alarm), the publish on
     * the publisher's. */
    if (msgs && bodies && results) {
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
    free(msgs);
    free(results);
    return rc;
}

/* One batch: 1 when it was full (more may wait), 0 when done, -1 after a failure. */
static int emit_batch(events_t *e)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", e->cfg->executor.batch_size);
    read_work_t w = {.limit = limit};
    if (dbc_statement(e->db, "reading unemitted dead letters", read_fn, &w) != DBC_OK) {
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
    int rc = publish(e, w.res, &ok);
    size_t sent = ok.n;
    const char *ids = pgarr_text(&ok);
    if (sent > 0 && ids)
        (void)dbc_statement(e->db, "marking dead-letter events emitted", mark_fn, (void *)ids);
    e->stats->events_published += sent;
    e->stats->events_failed += (uint64_t)n - sent;
    pgarr_free(&ok);
    PQclear(w.res);
    if (rc != MQ_OK) {
        int64_t wait_ms = backoff_next(&e->backoff, evloop_random());
        e->next_ms = now_mono_ms() + wait_ms;
        char failed[16], retry[24];
        snprintf(failed, sizeof failed, "%d", n - (int)sent);
        snprintf(retry, sizeof retry, "%" PRId64, wait_ms);
        log_kv(LOG_WARN, "dead-letter events not published; the records stay unemitted", "failed",
               failed, "status", mq_status_name(rc), "retry_in_ms", retry, NULL);
        return -1;
    }
    if (e->backoff.attempt > 0)
        log_kv(LOG_INFO, "dead-letter events published again", NULL);
    backoff_reset(&e->backoff);
    return n >= e->cfg->executor.batch_size ? 1 : 0;
}

void events_run(events_t *e)
{
    if (!e->cfg->events.enabled || now_mono_ms() < e->next_ms)
        return;
    int failures = e->backoff.attempt; /* the limits are reloadable, the count is not */
    backoff_init(&e->backoff, e->cfg->events.retry_initial_ms, e->cfg->events.retry_max_ms);
    e->backoff.attempt = failures;
    for (int round = 0; round < EVENTS_ROUNDS && emit_batch(e) == 1; round++)
        ;
}
