/*
 * The worker's control queue worker.{id}.control, on a connection of its own: cancel requests
 * from the executor (ExecutionCancelRequested). A running execution's handler is stopped, a held
 * one is reported cancelled without starting (unless it is a repeated dispatch of work that
 * finished here: its completion is sent again), anything else is logged and ignored; every control
 * message is acked once acted on, and one that is not a valid cancel request for this worker is
 * dead-lettered. See docs/worker.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "warren/log.h"
#include "warren/signing.h"
#include "worker/worker_internal.h"

/* A refusal is never fatal here: 405 RESOURCE_LOCKED means another connection still holds the
 * exclusive queue (an older process with this id that has not gone yet), and it goes away with
 * that connection. */
static int control_declare(worker_t *w, mq_client_t *c, char *err, size_t errlen, bool *fatal)
{
    (void)fatal;
    return topo_declare_control(c, w->o.cfg, w->id, err, errlen);
}

static int parse(const worker_t *w, const mq_delivery_t *d, envelope_t *e, cancel_request_t *c,
                 char *why, size_t len)
{
    if (subscriber_decode(d, MSG_EXECUTION_CANCEL_REQUESTED, e, why, len) != 0 ||
        cancel_from_payload(e->payload, c, why, len) != 0)
        return -1;
    return subscriber_addressed(w, "cancel", c->worker_id, why, len);
}

/* What became of a cancel request, for the log line that says so. */
static void log_cancel(worker_t *w, const cancel_request_t *c, log_level_t level, const char *msg)
{
    char id[24], attempt[16];
    snprintf(id, sizeof id, "%" PRId64, c->execution_id);
    snprintf(attempt, sizeof attempt, "%d", c->attempt);
    log_kv(level, msg, "worker", w->id, "execution_id", id, "attempt", attempt, "requested_by",
           c->requested_by, NULL);
}

static void ignore(worker_t *w, const cancel_request_t *c, const char *msg)
{
    w->stats.cancels_ignored++;
    log_cancel(w, c, LOG_INFO, msg);
}

/* A running handler: stopped, unless it is ending already, in which case its real outcome is
 * reported. */
static void cancel_running(worker_t *w, const cancel_request_t *c)
{
    switch (runner_cancel(w->runner, c->execution_id, c->attempt)) {
    case RUNNER_CANCEL_STOPPING: log_cancel(w, c, LOG_INFO, "cancelling execution"); break;
    case RUNNER_CANCEL_REPEATED:
        ignore(w, c, "cancel of an execution already being cancelled");
        break;
    case RUNNER_CANCEL_ENDED:
    case RUNNER_CANCEL_UNKNOWN:
        ignore(w, c, "cancel of an execution that is ending: its own outcome is reported");
        break;
    }
}

static void cancel(worker_t *w, const cancel_request_t *c)
{
    w->stats.cancels++;
    execs_record_t *x = execs_find(&w->execs, c->execution_id, c->attempt);
    if (!x) {
        ignore(w, c,
               execs_recent(&w->execs, c->execution_id, c->attempt)
                   ? "cancel of an execution this worker already finished: ignored"
                   : "cancel of an execution this worker does not hold: ignored");
        return;
    }
    switch (x->stage) {
    case STAGE_HELD:
        if (x->kept) { /* a repeated dispatch of work that finished here: that is its outcome */
            ignore(w, c,
                   "cancel of an execution this worker already finished: its completion is sent "
                   "again");
            break;
        }
        log_cancel(w, c, LOG_INFO, "cancelling execution before it starts");
        intake_cancel_held(w, x);
        break;
    case STAGE_RUNNING: cancel_running(w, c); break;
    case STAGE_FINISHED:
    case STAGE_COUNT:
        ignore(w, c, "cancel of an execution that has finished: its outcome is being reported");
        break;
    }
}

/* Not a cancel request for this worker: dead-letter it (nack without requeue), where the
 * executor stores it. */
static void reject(worker_t *w, const mq_delivery_t *d, const char *why)
{
    char *id = mq_header_string(&d->headers, "execution_id");
    w->stats.control_rejected++;
    log_kv(LOG_WARN, "control message rejected; dead-lettered", "worker", w->id, "reason", why,
           "message_id", d->message_id, "execution_id", id, "routing_key", d->routing_key, NULL);
    if (mq_nack(w->control_client, d->delivery_tag, false) != MQ_OK)
        log_kv(LOG_INFO, "nack not sent; the broker requeued the control message", "worker", w->id,
               "execution_id", id, NULL);
    free(id);
}

static void control_delivery(worker_t *w, mq_delivery_t *d)
{
    envelope_t e;
    cancel_request_t c;
    char why[ERRBUF_SIZE];
    if (sign_check(d, why, sizeof why) != 0) { /* never obeyed: not the executor's */
        w->stats.bad_signatures++;
        reject(w, d, why);
        mq_free_delivery(w->control_client, d);
        return;
    }
    if (parse(w, d, &e, &c, why, sizeof why) != 0) {
        reject(w, d, why);
    } else {
        cancel(w, &c);
        /* Acted on: the control queue dies with this connection, so there is nothing a
         * redelivery could add. */
        if (mq_ack(w->control_client, d->delivery_tag, false) != MQ_OK)
            log_cancel(w, &c, LOG_INFO, "ack of a cancel request not sent; the broker requeues it");
    }
    envelope_free(&e);
    mq_free_delivery(w->control_client, d);
}

const subscription_kind_t control_kind = {
    .consuming_msg = "consuming control messages",
    .while_draining = true, /* running handlers can still be cancelled while the worker drains */
    .declare = control_declare,
    .deliver = control_delivery,
};
