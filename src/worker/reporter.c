/* Sends the worker's reports (bodies from report_msg.c): running statuses and completions through
 * the outbox, and heartbeats. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "warren/fiber.h"
#include "warren/log.h"
#include "warren/version.h"
#include "worker/report_msg.h"
#include "worker/worker_internal.h"

static void ack_dispatch(worker_t *w, execs_record_t *x, const char *id);

/* Takes ownership of body (malloc'd; NULL when it could not be built: out of memory, or no
 * message id). -1 when it could not be queued: not built (*full false) or a full outbox
 * (*full true). */
static int push(worker_t *w, outbox_kind_t kind, const execs_record_t *x, msg_type_t type,
                const char *message_id, const char *key_prefix, char *body, size_t len, bool *full)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", key_prefix, w->id);
    outbox_msg_t *m = body ? outbox_msg_new(kind, x->execution_id, x->attempt, type, message_id,
                                            key, body, len)
                           : NULL;
    *full = m != NULL;
    if (m && outbox_push(&w->outbox, m, now_mono_ms()) == 0)
        return 0;
    outbox_msg_free(m);
    return -1;
}

/* push, and a report that could not be queued is dropped: -1, logged and counted. */
static int enqueue(worker_t *w, outbox_kind_t kind, const execs_record_t *x, msg_type_t type,
                   const char *message_id, const char *key_prefix, char *body, size_t len)
{
    char id[IDS_EXECUTION_ID_TEXT];
    bool full;
    if (push(w, kind, x, type, message_id, key_prefix, body, len, &full) == 0)
        return 0;
    /* Cannot happen while intake keeps room for every running execution's reports. */
    ids_execution_id_text(x->execution_id, id, sizeof id);
    w->stats.reports_lost++;
    log_kv(LOG_ERROR, full ? "outbox full: report dropped" : "report not built: report dropped",
           "worker", w->id, "execution_id", id, "type", msg_type_name(type), NULL);
    return -1;
}

void reporter_running(worker_t *w, execs_record_t *x)
{
    char message_id[40];
    size_t len = 0;
    bool has_id = envelope_new_id(message_id, sizeof message_id) == 0; /* else logged */
    report_msg_running_t r = {
        .worker_id = w->id,
        .execution_id = x->execution_id,
        .attempt = x->attempt,
        .started_at = x->started_at,
        .trace_id = x->trace_id,
        .incarnation = w->incarnation,
        .timeout_s = x->timeout_s,
    };
    char *body = has_id ? report_msg_running(&r, message_id, &len) : NULL;
    (void)enqueue(w, OUTBOX_RUNNING, x, MSG_EXECUTION_STATUS_CHANGED, message_id,
                  "execution.status", body, len);
}

void reporter_completion(worker_t *w, execs_record_t *x, const runner_result_t *r,
                         const char *ended_at)
{
    /* Finished before its running status went out (in-process handlers): the completion
     * alone says it all, and its confirmation acks the dispatch. One publish, one delivery
     * and one database update fewer per execution. */
    outbox_msg_free(outbox_take_unsent_running(&w->outbox, x->execution_id, x->attempt));
    char message_id[40], id[IDS_EXECUTION_ID_TEXT];
    size_t len = 0;
    report_msg_fate_t fate;
    bool has_id = envelope_new_id(message_id, sizeof message_id) == 0; /* else logged */
    report_msg_completion_t c = {
        .worker_id = w->id,
        .execution_id = x->execution_id,
        .attempt = x->attempt,
        .status = runner_outcome_name(r->outcome),
        .result_json = r->result_json,
        .exit_code = r->exit_code,
        .signal = r->signal,
        .error = r->error,
        .stderr_tail = r->stderr_tail,
        .truncated = r->truncated,
        .started_at = x->started_at,
        .ended_at = ended_at,
        .duration_ms = r->duration_ms,
        .trace_id = x->trace_id,
        .incarnation = w->incarnation,
    };
    char *body = has_id ? report_msg_completion(&c, message_id, &len, &fate) : NULL;
    /* Kept with the execution's key once it is confirmed: a repeated dispatch gets it again. */
    x->kept = report_msg_completion_keep(&c, &x->kept_bytes);
    if (body && fate != REPORT_MSG_RESULT_KEPT) {
        ids_execution_id_text(x->execution_id, id, sizeof id);
        log_kv(LOG_WARN,
               fate == REPORT_MSG_RESULT_TOO_DEEP
                   ? "result nests too deep for a message: sent as text under \"output\""
                   : "result too large for a message: cut, sent as text under \"output\"",
               "worker", w->id, "execution_id", id, NULL);
    }
    if (enqueue(w, OUTBOX_COMPLETED, x, MSG_EXECUTION_COMPLETED, message_id, "execution.completed",
                body, len) != 0) {
        /* Nothing will ever confirm a completion now: settle the dispatch here so it does not
         * hold a prefetch slot forever. The loss is logged and counted (reports_lost). */
        ids_execution_id_text(x->execution_id, id, sizeof id);
        ack_dispatch(w, x, id);
        execs_remove(&w->execs, x, true);
    }
}

int reporter_repeat(worker_t *w, execs_record_t *x)
{
    char message_id[40];
    size_t len = 0;
    report_msg_fate_t fate;
    report_msg_completion_t c = *x->kept;
    c.repeat = true;
    bool full;
    /* A new message: the first was delivered. Without an id (logged) nothing is built. */
    char *body = envelope_new_id(message_id, sizeof message_id) == 0
                     ? report_msg_completion(&c, message_id, &len, &fate)
                     : NULL;
    return push(w, OUTBOX_COMPLETED, x, MSG_EXECUTION_COMPLETED, message_id, "execution.completed",
                body, len, &full);
}

/* The message for m; id (IDS_EXECUTION_ID_TEXT bytes) gets the execution id text it points at. */
static mq_message_t message_of(const worker_t *w, const outbox_msg_t *m, char *id)
{
    ids_execution_id_text(m->execution_id, id, IDS_EXECUTION_ID_TEXT);
    return (mq_message_t){
        .exchange = w->exchange,
        .routing_key = m->routing_key,
        .body = m->body,
        .body_len = m->body_len,
        .message_id = m->message_id,
        .correlation_id = id,
        .type = msg_type_name(m->type),
        .execution_id = id,
        .attempt = m->attempt,
        .mandatory = true, /* unroutable means not delivered: retry, do not ack the dispatch */
    };
}

/* The broker confirmed m: a running status releases the dispatch's deliveries, a completion
 * ends the execution's stay. */
static void ack_dispatch(worker_t *w, execs_record_t *x, const char *id)
{
    for (size_t i = 0; i < x->n_tags; i++)
        if (mq_ack(w->consumer, x->tags[i], false) != MQ_OK)
            log_kv(LOG_INFO,
                   "ack not sent; the broker requeued the dispatch (its redelivery is "
                   "acked without running it again)",
                   "worker", w->id, "execution_id", id, NULL);
    x->n_tags = 0;
}

static void settled(worker_t *w, const outbox_msg_t *m)
{
    char id[IDS_EXECUTION_ID_TEXT];
    execs_record_t *x = execs_find(&w->execs, m->execution_id, m->attempt);
    if (!x)
        return;
    ids_execution_id_text(x->execution_id, id, sizeof id);
    if (m->kind == OUTBOX_COMPLETED) {
        log_kv(LOG_DEBUG, "completion confirmed", "worker", w->id, "execution_id", id, NULL);
        ack_dispatch(w, x, id); /* when its running status was never sent */
        execs_remove(&w->execs, x, true);
        return;
    }
    x->running_reported = true;
    ack_dispatch(w, x, id);
}

static void retry_later(worker_t *w, const outbox_msg_t *m, int status)
{
    char id[IDS_EXECUTION_ID_TEXT], ms[24], tries[16];
    int64_t now = now_mono_ms();
    int64_t wait = mq_retry_in_ms(w->publisher);
    int64_t delay;
    if (status == MQ_ERR_BREAKER_OPEN) {
        /* Nothing was sent: come back when the breaker admits a probe, quietly. */
        delay = wait > 0 ? wait : 1;
        outbox_defer(&w->outbox, now, delay);
        (void)evloop_arm(&w->ev_retry, delay);
        return;
    }
    delay = outbox_failed(&w->outbox, now, wait, evloop_random());
    w->stats.publish_retries++;
    ids_execution_id_text(m->execution_id, id, sizeof id);
    snprintf(ms, sizeof ms, "%" PRId64, delay);
    snprintf(tries, sizeof tries, "%d", m->tries);
    log_kv(LOG_WARN, "report not confirmed; retrying", "worker", w->id, "execution_id", id, "type",
           msg_type_name(m->type), "status", mq_status_name(status), "error",
           mq_last_error(w->publisher), "tries", tries, "retry_in_ms", ms, NULL);
    (void)evloop_arm(&w->ev_retry, delay);
}

/* The head of the outbox was confirmed: settle and free it. */
static void confirmed(worker_t *w)
{
    outbox_msg_t *m = outbox_pop(&w->outbox);
    if (m->tries > 0) {
        char id[IDS_EXECUTION_ID_TEXT];
        ids_execution_id_text(m->execution_id, id, sizeof id);
        log_kv(LOG_INFO, "report confirmed after retrying", "worker", w->id, "execution_id", id,
               "type", msg_type_name(m->type), NULL);
    }
    settled(w, m);
    outbox_msg_free(m);
}

/*
 * Publish what is due as pipelined batches: one confirm wait per batch, not per report (the
 * broker confirms persistent messages after its disk write, so waiting for each in turn caps
 * a worker at a few hundred reports a second). Reports stay in order; the confirmed prefix is
 * settled, and from the first failure on everything is retried, so a report confirmed after a
 * failed one may be sent twice: the executor's attempt-fenced compare-and-swap ignores repeats.
 * On the flush fiber: the batch is in flight (never coalesced away) while its confirms come.
 */
static void flush_due(worker_t *w)
{
    enum { FLUSH_BATCH = 256 };
    mq_message_t msgs[FLUSH_BATCH];
    char ids[FLUSH_BATCH][IDS_EXECUTION_ID_TEXT];
    int results[FLUSH_BATCH];
    const outbox_msg_t *m;
    while (w->phase != PHASE_DONE && (m = outbox_due(&w->outbox, now_mono_ms())) != NULL) {
        size_t n = 0;
        for (; m && n < FLUSH_BATCH; m = m->next, n++)
            msgs[n] = message_of(w, m, ids[n]);
        w->outbox.inflight = n;
        int rc = mq_publish_batch(w->publisher, msgs, n, results);
        for (size_t i = 0; i < n; i++) {
            if (rc != MQ_OK && results[i] != MQ_OK) {
                w->outbox.inflight = 0;
                retry_later(w, w->outbox.head, results[i]);
                return;
            }
            confirmed(w);
        }
    }
}

static void flush_fiber(void *arg)
{
    worker_t *w = arg;
    do {
        w->flush_again = false;
        flush_due(w);
    } while (w->flush_again && w->phase != PHASE_DONE);
    w->flushing = false;
    worker_kick_soon(w); /* a drain may be complete now, or more became due */
}

void reporter_flush(worker_t *w)
{
    if (!outbox_due(&w->outbox, now_mono_ms()))
        return;
    if (w->flushing) {
        w->flush_again = true;
        return;
    }
    w->flushing = true;
    if (fiber_start(w->base, "flush", flush_fiber, w) != 0)
        w->flushing = false; /* logged; the next kick or retry tries again */
}

static void send_heartbeat(worker_t *w, const char *status)
{
    char message_id[40], key[160];
    size_t len = 0;
    bool has_id = envelope_new_id(message_id, sizeof message_id) == 0; /* else logged */
    snprintf(key, sizeof key, "worker.heartbeat.%s", w->id);
    json_object *capabilities = runner_handlers(w->runner);
    report_msg_heartbeat_t h = {
        .worker_id = w->id,
        .status = status,
        .capabilities = capabilities,
        .capacity = w->o.max_concurrency,
        .running = (int)runner_running(w->runner),
        .heartbeat_interval_s = w->o.heartbeat_interval_s,
        .host = w->host,
        .version = WARREN_VERSION,
        .started_at = w->started_at,
        .incarnation = w->incarnation,
    };
    char *body = has_id ? report_msg_heartbeat(&h, message_id, &len) : NULL;
    json_object_put(capabilities);
    mq_message_t msg = {
        .exchange = w->exchange,
        .routing_key = key,
        .body = body,
        .body_len = len,
        .message_id = message_id,
        .type = msg_type_name(MSG_WORKER_HEARTBEAT),
        .mandatory = true,
    };
    bool built = body != NULL;
    int rc = built ? mq_publish(w->publisher, &msg) : MQ_ERR_CONNECTION;
    free(body);
    if (rc == MQ_OK) {
        /* Only the change is news: a broker outage would otherwise log every interval. */
        log_kv(w->heartbeats_failing ? LOG_INFO : LOG_DEBUG,
               w->heartbeats_failing ? "heartbeats published again" : "heartbeat sent", "worker",
               w->id, "status", status, NULL);
        w->heartbeats_failing = false;
        return;
    }
    w->stats.heartbeats_failed++;
    log_kv(w->heartbeats_failing ? LOG_DEBUG : LOG_WARN, "heartbeat not published", "worker", w->id,
           "status", status, "reason",
           built    ? mq_status_name(rc)
           : has_id ? "out of memory"
                    : "no message id",
           "error", mq_last_error(w->publisher), NULL);
    w->heartbeats_failing = true;
}

static void heartbeat_fiber(void *arg)
{
    worker_t *w = arg;
    while (w->heartbeat_next) {
        const char *status = w->heartbeat_next;
        w->heartbeat_next = NULL;
        send_heartbeat(w, status);
    }
    w->heartbeating = false;
}

void reporter_heartbeat(worker_t *w, const char *status)
{
    if (w->phase == PHASE_DONE)
        return;
    w->heartbeat_next = status; /* the newest status wins */
    if (w->heartbeating)
        return;
    w->heartbeating = true;
    if (fiber_start(w->base, "heartbeat", heartbeat_fiber, w) != 0) {
        w->heartbeating = false;
        w->heartbeat_next = NULL;
        w->stats.heartbeats_failed++;
    }
}

void reporter_give_up(worker_t *w)
{
    outbox_msg_t *m;
    while ((m = outbox_pop(&w->outbox)) != NULL) {
        char id[IDS_EXECUTION_ID_TEXT], tries[16];
        ids_execution_id_text(m->execution_id, id, sizeof id);
        snprintf(tries, sizeof tries, "%d", m->tries);
        w->stats.reports_lost++;
        log_kv(LOG_ERROR,
               "report never confirmed; given up at exit (the executor's monitor "
               "settles the execution)",
               "worker", w->id, "execution_id", id, "type", msg_type_name(m->type), "tries", tries,
               NULL);
        outbox_msg_free(m);
    }
}
