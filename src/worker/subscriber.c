/* The worker's subscription: declare and consume its queue, again after any loss; drain. */
#include <stdio.h>
#include "warren/log.h"
#include "worker/worker_internal.h"

enum { SUBSCRIBED = 0, RETRY, REFUSED };

/* May run inside ev_consume's own callback: the event is only deleted, never freed. */
static void unwatch(worker_t *w)
{
    if (w->consuming)
        event_del(&w->ev_consume);
    w->consuming = false;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    subscriber_drain(arg);
}

/* The event is set up afresh for every subscription: after a reconnect the socket may reuse
 * the old fd number, which the old registration would never report again. */
static int watch(worker_t *w)
{
    unwatch(w);
    if (event_assign(&w->ev_consume, w->base, mq_fd(w->consumer), EV_READ | EV_PERSIST, on_readable,
                     w) != 0 ||
        event_add(&w->ev_consume, NULL) != 0)
        return -1;
    w->consuming = true;
    return 0;
}

static int subscribe(worker_t *w, char *err, size_t errlen)
{
    const warren_config_t *cfg = w->o.cfg;
    /* The common topology too: the binding needs the exchange, dead-lettering the DLX, and
     * the worker's reports a queue to land in, even when no executor ran yet. */
    if (topo_declare_common(w->consumer, cfg, err, errlen) != 0 ||
        topo_declare_worker(w->consumer, cfg, w->id, err, errlen) != 0)
        /* Still connected means the broker answered and refused (406 inequivalent arguments,
         * 403): retrying cannot help, an operator has to act. */
        return mq_connected(w->consumer) ? REFUSED : RETRY;
    if (mq_consume(w->consumer, w->queue, err, errlen) != MQ_OK)
        return RETRY;
    if (watch(w) != 0) {
        snprintf(err, errlen, "cannot watch the consumer socket");
        mq_disconnect(w->consumer);
        return RETRY;
    }
    return SUBSCRIBED;
}

static void on_subscribe(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_t *w = arg;
    char err[ERRBUF_SIZE] = "";
    if (w->phase != PHASE_RUNNING)
        return;
    int rc = subscribe(w, err, sizeof err);
    if (rc == REFUSED) {
        log_kv(LOG_ERROR, "the broker refused the worker's topology", "worker", w->id, "queue",
               w->queue, "error", err, NULL);
        worker_finish(w, EXIT_RUNTIME);
        return;
    }
    if (rc == RETRY) {
        int64_t delay = backoff_next(&w->subscribe_backoff, evloop_random());
        int64_t wait = mq_retry_in_ms(w->consumer);
        char ms[24];
        snprintf(ms, sizeof ms, "%lld", (long long)(wait > delay ? wait : delay));
        log_kv(LOG_WARN, "cannot consume the worker queue; retrying", "worker", w->id, "queue",
               w->queue, "error", err, "retry_in_ms", ms, NULL);
        subscriber_start_later(w, wait > delay ? wait : delay);
        return;
    }
    backoff_reset(&w->subscribe_backoff);
    log_kv(LOG_INFO, "consuming dispatches", "worker", w->id, "queue", w->queue, NULL);
    /* The broker is reachable again: waiting reports need not sit out their backoff. */
    if (w->outbox.failing) {
        outbox_retry_now(&w->outbox);
        evtimer_del(&w->ev_retry);
    }
    /* An announce after every subscription: after a broker restart the executor may have
     * marked this worker stale. */
    reporter_heartbeat(w, "online");
    subscriber_drain(w); /* frames read during the declarations are already buffered */
}

void subscriber_init(worker_t *w)
{
    evtimer_assign(&w->ev_subscribe, w->base, on_subscribe, w);
}

void subscriber_start_later(worker_t *w, int64_t delay_ms)
{
    if (evloop_arm(&w->ev_subscribe, delay_ms) != 0)
        worker_finish(w, EXIT_RUNTIME); /* it would never consume */
}

/* The consumer ended. After a cancel (ours, or the broker's when the queue was deleted) the
 * channel is still open and unacked deliveries can still be acked; after a channel or
 * connection loss the broker has requeued them all. */
static void subscriber_ended(worker_t *w, int status)
{
    unwatch(w);
    if (status != MQ_ERR_CANCELLED)
        intake_forget_deliveries(w);
    if (w->phase != PHASE_RUNNING)
        return;
    w->stats.resubscribes++;
    int64_t delay = backoff_next(&w->subscribe_backoff, evloop_random());
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)delay);
    log_kv(LOG_WARN, "consumer lost; subscribing again", "worker", w->id, "queue", w->queue,
           "reason", mq_status_name(status), "error", mq_last_error(w->consumer), "retry_in_ms", ms,
           NULL);
    subscriber_start_later(w, delay);
}

void subscriber_drain(worker_t *w)
{
    mq_delivery_t *d;
    int rc = 0;
    while (w->consuming && (rc = mq_consume_next(w->consumer, 0, &d)) == 1)
        intake_delivery(w, d);
    if (w->consuming && rc < 0)
        subscriber_ended(w, rc);
    worker_kick_soon(w); /* after the completions in-process handlers queued meanwhile */
}

void subscriber_cancel(worker_t *w)
{
    char err[ERRBUF_SIZE] = "";
    evtimer_del(&w->ev_subscribe);
    if (!w->consuming)
        return;
    int rc = mq_cancel(w->consumer, err, sizeof err);
    if (rc != MQ_OK)
        log_kv(LOG_WARN, "cancelling the consumer failed", "worker", w->id, "status",
               mq_status_name(rc), "error", err, NULL);
    subscriber_drain(w); /* deliveries sent before the cancel: requeued, since not running */
}

void subscriber_pump(worker_t *w)
{
    if (w->consuming) {
        if (mq_pump(w->consumer) != 0)
            subscriber_drain(w);
    } else if (mq_connected(w->consumer)) {
        /* Not consuming (draining, or between subscriptions): the connection still carries
         * acks for running executions, so keep its heartbeats going. */
        int rc = mq_pump(w->consumer);
        (void)rc; /* a loss shows at the next ack or subscription */
    }
}
