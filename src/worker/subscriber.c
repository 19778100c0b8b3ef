/* The worker's subscriptions: declare and consume a queue, again after any loss; drain. The
 * dispatch queue's kind is here; the control queue's is in control.c. */
#include <stdio.h>
#include <string.h>
#include "warren/log.h"
#include "warren/notify.h"
#include "worker/worker_internal.h"

enum { SUBSCRIBED = 0, RETRY, REFUSED };

/* It consumes while the worker takes dispatches, or also while it drains. */
static bool may_consume(const subscription_t *s)
{
    return s->w->phase == PHASE_RUNNING ||
           (s->kind->while_draining && s->w->phase == PHASE_DRAINING);
}

/* May run inside ev_consume's own callback: the event is only deleted, never freed. */
static void unwatch(subscription_t *s)
{
    if (s->consuming)
        event_del(&s->ev_consume);
    s->consuming = false;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    subscriber_drain(arg);
}

/* The event is set up afresh for every subscription: after a reconnect the socket may reuse
 * the old fd number, which the old registration would never report again. */
static int watch(subscription_t *s)
{
    unwatch(s);
    if (event_assign(&s->ev_consume, s->w->base, mq_fd(s->client), EV_READ | EV_PERSIST,
                     on_readable, s) != 0 ||
        event_add(&s->ev_consume, NULL) != 0)
        return -1;
    s->consuming = true;
    return 0;
}

static int subscribe(subscription_t *s, char *err, size_t errlen)
{
    bool fatal = false;
    if (s->kind->declare(s->w, s->client, err, errlen, &fatal) != 0)
        return fatal ? REFUSED : RETRY;
    if (mq_consume(s->client, s->queue, err, errlen) != MQ_OK)
        return RETRY;
    if (watch(s) != 0) {
        snprintf(err, errlen, "cannot watch the consumer socket");
        mq_disconnect(s->client);
        return RETRY;
    }
    return SUBSCRIBED;
}

static void on_subscribe(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    subscription_t *s = arg;
    worker_t *w = s->w;
    char err[ERRBUF_SIZE] = "";
    if (!may_consume(s))
        return;
    int rc = subscribe(s, err, sizeof err);
    if (rc == REFUSED) {
        log_kv(LOG_ERROR, "the broker refused the worker's topology", "worker", w->id, "queue",
               s->queue, "error", err, NULL);
        worker_finish(w, EXIT_RUNTIME);
        return;
    }
    if (rc == RETRY) {
        int64_t delay = backoff_next(&s->backoff, evloop_random());
        int64_t wait = mq_retry_in_ms(s->client);
        char ms[24];
        snprintf(ms, sizeof ms, "%lld", (long long)(wait > delay ? wait : delay));
        log_kv(LOG_WARN, "cannot consume the worker queue; retrying", "worker", w->id, "queue",
               s->queue, "error", err, "retry_in_ms", ms, NULL);
        if (s->kind->readiness) {
            char status[ERRBUF_SIZE + 64];
            snprintf(status, sizeof status, "waiting for RabbitMQ: cannot consume %s: %s", s->queue,
                     err);
            notify_status(status);
        }
        subscriber_start_later(s, wait > delay ? wait : delay);
        return;
    }
    backoff_reset(&s->backoff);
    log_kv(LOG_INFO, s->kind->consuming_msg, "worker", w->id, "queue", s->queue, NULL);
    if (s->kind->readiness) {
        char status[300];
        snprintf(status, sizeof status, "consuming %s", s->queue);
        notify_ready(status); /* again after a resubscription: a no-op for the manager */
    }
    if (s->kind->subscribed)
        s->kind->subscribed(w);
    subscriber_drain(s); /* frames read during the declarations are already buffered */
}

void subscriber_init(subscription_t *s, worker_t *w, const subscription_kind_t *kind,
                     mq_client_t *client, const char *queue, uint64_t *resubscribes)
{
    *s = (subscription_t){
        .w = w, .kind = kind, .client = client, .queue = queue, .resubscribes = resubscribes};
    backoff_init(&s->backoff, SUBSCRIBE_BASE_MS, SUBSCRIBE_MAX_MS);
    evtimer_assign(&s->ev_subscribe, w->base, on_subscribe, s);
}

void subscriber_start_later(subscription_t *s, int64_t delay_ms)
{
    if (evloop_arm(&s->ev_subscribe, delay_ms) != 0)
        worker_finish(s->w, EXIT_RUNTIME); /* it would never consume */
}

/* The consumer ended. After a cancel (ours, or the broker's when the queue was deleted) the
 * channel is still open and unacked deliveries can still be acked; after a channel or
 * connection loss the broker has requeued them all. */
static void subscriber_ended(subscription_t *s, int status)
{
    worker_t *w = s->w;
    unwatch(s);
    if (s->kind->lost)
        s->kind->lost(w, status);
    if (!may_consume(s))
        return;
    (*s->resubscribes)++;
    int64_t delay = backoff_next(&s->backoff, evloop_random());
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)delay);
    log_kv(LOG_WARN, "consumer lost; subscribing again", "worker", w->id, "queue", s->queue,
           "reason", mq_status_name(status), "error", mq_last_error(s->client), "retry_in_ms", ms,
           NULL);
    if (s->kind->readiness)
        notify_status("consumer lost; subscribing again");
    subscriber_start_later(s, delay);
}

void subscriber_drain(subscription_t *s)
{
    mq_delivery_t *d;
    int rc = 0;
    while (s->consuming && (rc = mq_consume_next(s->client, 0, &d)) == 1)
        s->kind->deliver(s->w, d);
    if (s->consuming && rc < 0)
        subscriber_ended(s, rc);
    worker_kick_soon(s->w); /* after the completions in-process handlers queued meanwhile */
}

void subscriber_cancel(subscription_t *s)
{
    char err[ERRBUF_SIZE] = "";
    evtimer_del(&s->ev_subscribe);
    if (!s->consuming)
        return;
    int rc = mq_cancel(s->client, err, sizeof err);
    if (rc != MQ_OK)
        log_kv(LOG_WARN, "cancelling the consumer failed", "worker", s->w->id, "queue", s->queue,
               "status", mq_status_name(rc), "error", err, NULL);
    subscriber_drain(s); /* deliveries sent before the cancel: requeued, since not running */
}

void subscriber_pump(subscription_t *s)
{
    if (s->consuming) {
        if (mq_pump(s->client) != 0)
            subscriber_drain(s);
    } else if (mq_connected(s->client)) {
        /* Not consuming (draining, or between subscriptions): the connection still carries
         * acks for running executions, so keep its heartbeats going. */
        int rc = mq_pump(s->client);
        (void)rc; /* a loss shows at the next ack or subscription */
    }
}

int subscriber_decode(const mq_delivery_t *d, msg_type_t type, envelope_t *e, char *why, size_t len)
{
    memset(e, 0, sizeof *e);
    if (d->oversized) { /* only its first bytes were read; the executor records it */
        mq_oversized_text(d, why, len);
        return -1;
    }
    if (envelope_decode(d->body, d->body_len, e, why, len) != 0)
        return -1;
    if (e->type != type) {
        snprintf(why, len, "message_type '%s' is not %s", e->type_name, msg_type_name(type));
        return -1;
    }
    return 0;
}

int subscriber_addressed(const worker_t *w, const char *what, const char *to, char *why, size_t len)
{
    if (strcmp(to, w->id) == 0)
        return 0;
    snprintf(why, len, "%s for worker '%s' reached worker '%s'", what, to, w->id);
    return -1;
}

/* ---- the dispatch queue ---------------------------------------------------------------------- */

static int dispatch_declare(worker_t *w, mq_client_t *c, char *err, size_t errlen, bool *fatal)
{
    const warren_config_t *cfg = w->o.cfg;
    /* The common topology too: the binding needs the exchange, dead-lettering the DLX, and
     * the worker's reports a queue to land in, even when no executor ran yet. */
    if (topo_declare_common(c, cfg, err, errlen) == 0 &&
        topo_declare_worker(c, cfg, w->id, err, errlen) == 0)
        return 0;
    /* Still connected means the broker answered and refused (406 inequivalent arguments,
     * 403): retrying cannot help, an operator has to act. */
    *fatal = mq_connected(c);
    return -1;
}

static void dispatch_subscribed(worker_t *w)
{
    /* The broker is reachable again: waiting reports need not sit out their backoff. */
    if (w->outbox.failing) {
        outbox_retry_now(&w->outbox);
        evtimer_del(&w->ev_retry);
    }
    /* An announce after every subscription: after a broker restart the executor may have
     * marked this worker stale. */
    reporter_heartbeat(w, "online");
}

static void dispatch_lost(worker_t *w, int status)
{
    if (status != MQ_ERR_CANCELLED)
        intake_forget_deliveries(w);
}

const subscription_kind_t subscriber_dispatches = {
    .consuming_msg = "consuming dispatches",
    .while_draining = false, /* a drain cancels it: another incarnation takes new work */
    .readiness = true,
    .declare = dispatch_declare,
    .deliver = intake_delivery,
    .subscribed = dispatch_subscribed,
    .lost = dispatch_lost,
};
