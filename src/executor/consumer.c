/* A consumed queue on the executor's loop: drain, commit a batch on a fiber, ack, retry later. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/consumer.h"
#include "executor/fault.h"
#include "warren/fiber.h"
#include "warren/log.h"

#define RETRY_CAP_MS 30000
/* Body bytes handled in one transaction (parameters are several times that). */
#define BATCH_MAX_BYTES (8 * 1024 * 1024)
/* The bodies a consumer holds at most (64 deliveries of the largest, as before the window grew
 * to 256): the prefetch window no longer bounds its memory alone. */
#define CONSUMER_HOLD_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define SUBSCRIBE_LOG_EVERY_MS 30000

static void on_readable(evutil_socket_t fd, short what, void *arg);
static void on_retry(evutil_socket_t fd, short what, void *arg);
static void consume_available(consumer_t *c);
static void sync_watch(consumer_t *c);

int consumer_init(consumer_t *c, const consumer_opts_t *o)
{
    memset(c, 0, sizeof *c);
    c->name = o->name;
    c->base = o->base;
    c->handler = o->handler;
    c->fallback = o->fallback;
    c->db = o->db;
    c->stats = o->stats;
    c->declare = o->declare;
    c->declare_arg = o->declare_arg;
    c->committed = o->committed;
    c->committed_arg = o->committed_arg;
    c->fd = -1;
    c->gaps = 1; /* not heard before the first subscription */
    c->fault_oom_pending = fault_armed("hold_oom_once"); /* tests only */
    backoff_init(&c->retry_backoff, o->retry_delay_ms > 0 ? o->retry_delay_ms : 1000, RETRY_CAP_MS);
    c->prefetch = o->mq && o->mq->prefetch > 0 ? (size_t)o->mq->prefetch : 0;
    c->queue = strdup(o->queue);
    c->mq = mq_new(o->mq);
    evtimer_assign(&c->retry_ev, o->base, on_retry, c);
    return c->queue && c->mq ? 0 : -1;
}

void consumer_reconfigure(consumer_t *c, const warren_config_t *cfg)
{
    if (!c->mq)
        return; /* never set up */
    int ms = cfg->executor.dlq_retry_delay_ms;
    c->retry_backoff.base_ms = ms > 0 ? ms : 1000;
    mq_reconfigure(c->mq, cfg);
}

static void free_batch(consumer_t *c, size_t from)
{
    for (size_t i = from; i < c->n; i++) {
        c->held_bytes -= c->batch[i]->body_len;
        mq_free_delivery(c->mq, c->batch[i]);
    }
    c->n = from;
}

/* May run inside read_ev's own callback: the event is only deleted, never freed. */
static void unwatch(consumer_t *c)
{
    if (c->fd >= 0)
        event_del(&c->read_ev);
    c->fd = -1;
}

void consumer_free(consumer_t *c)
{
    if (!c->queue && !c->mq)
        return; /* never set up */
    if (c->n > 0) {
        char held[24];
        snprintf(held, sizeof held, "%zu", c->n);
        log_kv(LOG_WARN, "leaving unacked deliveries to the broker", "queue", c->queue, "unacked",
               held, NULL);
    }
    unwatch(c);
    event_del(&c->retry_ev);
    free_batch(c, 0);
    free(c->batch);
    mq_destroy(c->mq);
    free(c->queue);
    memset(c, 0, sizeof *c);
}

size_t consumer_unacked(const consumer_t *c)
{
    return c->n;
}

bool consumer_hearing(const consumer_t *c)
{
    return c->subscribed && !c->retry_pending;
}

/*
 * Keep the read event in step with the client: a reconnect brings a new socket (perhaps with
 * the old number), so the event is dropped whenever the connection or subscription is gone
 * and made again for the new socket. Called after every call into the client.
 */
static void sync_watch(consumer_t *c)
{
    /* Not while its fiber handles a batch: the socket would stay readable, and the loop spin. */
    bool want = c->subscribed && mq_connected(c->mq) && !c->retry_pending && !c->busy &&
                !c->finishing;
    int fd = want ? mq_fd(c->mq) : -1;
    if (c->fd >= 0 && (!want || fd != c->fd))
        unwatch(c);
    if (!want || c->fd >= 0)
        return;
    if (event_assign(&c->read_ev, c->base, fd, EV_READ | EV_PERSIST, on_readable, c) != 0 ||
        event_add(&c->read_ev, NULL) != 0) {
        log_kv(LOG_ERROR, "cannot watch the consumer socket", "queue", c->queue, NULL);
        return;
    }
    c->fd = fd;
}

/* The consumer is gone. After a connection or channel loss the broker requeues what we held,
 * so those deliveries cannot be acked any more: drop them (they come back). */
static void lost(consumer_t *c, int status)
{
    c->subscribed = false;
    c->gaps++;
    log_kv(LOG_WARN, "consumer lost; resubscribing", "queue", c->queue, "status",
           mq_status_name(status), "error", mq_last_error(c->mq), NULL);
    if (status != MQ_ERR_CANCELLED)
        free_batch(c, 0);
    sync_watch(c);
}

int consumer_start(consumer_t *c, char *err, size_t errlen)
{
    int rc = mq_consume(c->mq, c->queue, err, errlen);
    c->subscribed = rc == MQ_OK;
    sync_watch(c);
    if (c->subscribed)
        consume_available(c); /* the subscription may have brought deliveries already */
    return c->subscribed ? 0 : -1;
}

static bool push(consumer_t *c, mq_delivery_t *d)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
        mq_delivery_t **b = realloc(c->batch, cap * sizeof *b);
        if (!b)
            return false;
        c->batch = b;
        c->cap = cap;
    }
    c->batch[c->n++] = d;
    c->held_bytes += d->body_len;
    return true;
}

/* Everything the client has buffered or can read now, appended to the batch; up to
 * CONSUMER_HOLD_MAX_BYTES of bodies: what is past it waits in the socket (and, past the kernel's
 * buffer, in the broker), and the fiber goes round again once this batch is handled. */
static void read_available(consumer_t *c)
{
    for (;;) {
        if (c->held_bytes >= CONSUMER_HOLD_MAX_BYTES) {
            c->again = true;
            break;
        }
        mq_delivery_t *d = NULL;
        int r = mq_consume_next(c->mq, 0, &d);
        bool oom = r == 1 && c->fault_oom_pending;
        c->fault_oom_pending &= r != 1;
        if (r == 1 && !oom && push(c, d))
            continue;
        if (r == 1) {
            /* Out of memory: give it back to the broker now. Merely dropping it would let the
             * next batch's ack multiple ack it too, unstored. */
            int nacked = mq_nack(c->mq, d->delivery_tag, true);
            log_kv(LOG_ERROR, "out of memory holding a delivery; returned to the queue", "queue",
                   c->queue, "nack", mq_status_name(nacked), NULL);
            mq_free_delivery(c->mq, d);
            continue;
        }
        if (r < 0 && c->subscribed)
            lost(c, r);
        break;
    }
    sync_watch(c);
}

static void ack(consumer_t *c, uint64_t tag, bool multiple)
{
    if (mq_ack(c->mq, tag, multiple) != MQ_OK) {
        /* Committed but not acked: the broker redelivers, and the handlers are idempotent
         * (attempt-fenced CAS, dead_letters dedup_key), so the redelivery changes nothing. */
        c->stats->acks_failed++;
        log_kv(LOG_WARN, "ack after commit failed; the redelivery will be a no-op", "queue",
               c->queue, "error", mq_last_error(c->mq), NULL);
    }
    sync_watch(c);
}

static void schedule_retry(consumer_t *c)
{
    int64_t delay = backoff_next(&c->retry_backoff, evloop_random());
    char ms[24], held[24];
    snprintf(ms, sizeof ms, "%lld", (long long)delay);
    snprintf(held, sizeof held, "%zu", c->n);
    log_kv(LOG_WARN, "batch kept unacked; retrying later", "queue", c->queue, "retry_in_ms", ms,
           "unacked", held, NULL);
    c->stats->batches_retried++;
    if (!c->retry_pending)
        c->gaps++;
    c->retry_pending = true;
    (void)evloop_arm(&c->retry_ev, delay);
    sync_watch(c);
}

/* Free and remove the first k deliveries of the batch. */
static void drop_front(consumer_t *c, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        c->held_bytes -= c->batch[i]->body_len;
        mq_free_delivery(c->mq, c->batch[i]);
    }
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
    memmove(c->batch, c->batch + k, (c->n - k) * sizeof *c->batch);
    c->n -= k;
}

typedef struct handler_run {
    const consumer_handler_t *h;
    consumer_batch_t b;
} handler_run_t;

static int run_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    handler_run_t *r = arg;
    memset(&r->b.counts, 0, sizeof r->b.counts);
    stats_init(&r->b.counts);
    return r->h->work(db, &r->b, err, errlen);
}

/* The first n deliveries of the batch through h: parse, one transaction, then after COMMIT
 * the counts and the log lines; the items are freed in any case. */
static dbc_result_t run_handler(consumer_t *c, const consumer_handler_t *h, size_t n,
                                const char *refused)
{
    handler_run_t r = {.h = h, .b = {.n = n, .queue = c->queue, .refused = refused}};
    char *items = calloc(n, h->item_size);
    if (!items)
        return DBC_UNAVAILABLE; /* kept unacked: retried later */
    r.b.items = items;
    for (size_t i = 0; i < n; i++)
        h->parse(items + i * h->item_size, c->batch[i], c->queue);
    dbc_result_t res = dbc_transaction(c->db, h->what, run_work, &r);
    if (res == DBC_OK) {
        stats_merge(c->stats, &r.b.counts);
        if (c->committed)
            c->committed(c->committed_arg, &r.b.counts);
        for (size_t i = 0; h->log_item && i < n; i++)
            h->log_item(items + i * h->item_size, c->queue);
    }
    for (size_t i = 0; h->free_item && i < n; i++)
        h->free_item(items + i * h->item_size);
    free(items);
    return res;
}

/* One message through the handler, then through the handlers for what it refused, the last
 * resort last. */
static dbc_result_t handle_one(consumer_t *c, const mq_delivery_t *d)
{
    const consumer_handler_t *h = c->handler;
    dbc_result_t r = run_handler(c, h, 1, NULL);
    while (r == DBC_FAILED && h != c->fallback) {
        char refused[ERRBUF_SIZE];
        snprintf(refused, sizeof refused, "%s", c->db->last_error);
        h = h->on_refused ? h->on_refused : c->fallback;
        log_kv(LOG_ERROR, "message refused by the database", "queue", c->queue, "message_id",
               d->message_id ? d->message_id : "", "error", refused, "next", h->what, NULL);
        r = run_handler(c, h, 1, refused);
    }
    return r;
}

/* One message at a time after the database refused a batch; the fallbacks store a message its
 * handler still cannot. Returns false when the database went away (retry later). */
static bool handle_isolated(consumer_t *c)
{
    while (c->n > 0) {
        mq_delivery_t *d = c->batch[0];
        if (handle_one(c, d) != DBC_OK)
            return false;
        ack(c, d->delivery_tag, false);
        drop_front(c, 1);
    }
    c->isolate = false;
    return true;
}

/* How many deliveries from the front go into one transaction: all of them, unless their bodies
 * add up to more than BATCH_MAX_BYTES (dead letters can be 1 MiB each), or more than half the
 * prefetch window: the ack of one half lets the broker send more while the other half is
 * handled, so a backlog's deliveries and transactions overlap. At least one. */
static size_t chunk(const consumer_t *c)
{
    size_t k = 1, bytes = c->batch[0]->body_len, most = c->prefetch >= 2 ? c->prefetch / 2 : c->n;
    while (k < c->n && k < most && bytes + c->batch[k]->body_len <= BATCH_MAX_BYTES)
        bytes += c->batch[k++]->body_len;
    return k;
}

static void handle_batch(consumer_t *c)
{
    c->last_batch = c->n;
    while (c->n > 0 && !c->isolate) {
        size_t k = chunk(c);
        char size[24];
        snprintf(size, sizeof size, "%zu", k);
        log_kv(LOG_DEBUG, "batch", "queue", c->queue, "size", size, NULL);
        dbc_result_t r = run_handler(c, c->handler, k, NULL);
        if (r == DBC_UNAVAILABLE) {
            schedule_retry(c);
            return;
        }
        if (r == DBC_FAILED) {
            c->isolate = true;
            break;
        }
        ack(c, c->batch[k - 1]->delivery_tag, true);
        drop_front(c, k);
    }
    if (c->isolate && !handle_isolated(c)) {
        schedule_retry(c);
        return;
    }
    backoff_reset(&c->retry_backoff);
}

/* A backlog drains in full batches: after a round that took (nearly) the whole prefetch
 * window, the ack of which lets the broker send the next window, wait up to
 * CONSUMER_FILL_MS for half of it before the next transaction. Without this a flood was handled
 * in transactions of one or two deliveries, whichever had arrived when the fiber looked: 20,000
 * junk messages in 554 transactions and 2 s, with a real completion behind them. At light load
 * the last round was small and nothing waits. */
#define CONSUMER_FILL_MS 2
static void fill_window(consumer_t *c)
{
    size_t half = c->prefetch / 2;
    if (half == 0 || c->last_batch < half)
        return;
    for (int ms = 0; ms < CONSUMER_FILL_MS && c->n < half && c->subscribed && !c->finishing; ms++) {
        fiber_sleep_ms(1);
        read_available(c);
    }
}

/* The consumer's fiber: read every delivery the client has, handle them as one batch, again
 * while more was announced meanwhile (unless a retry waits). */
static void consume_fiber(void *arg)
{
    consumer_t *c = arg;
    do {
        c->again = false;
        read_available(c);
        fill_window(c);
        handle_batch(c);
    } while (c->again && !c->retry_pending);
    c->busy = false;
    sync_watch(c);
}

/* Handle what arrived, on the consumer's fiber; once at a time (a call meanwhile makes it go
 * round again). */
static void consume_available(consumer_t *c)
{
    if (c->retry_pending)
        return;
    if (c->busy) {
        c->again = true;
        return;
    }
    c->busy = true;
    sync_watch(c);
    if (fiber_start(c->base, "consumer", consume_fiber, c) != 0) {
        c->busy = false; /* logged; the next read event or pump tries again */
        sync_watch(c);
    }
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    consume_available(arg);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    consumer_t *c = arg;
    c->retry_pending = false;
    consume_available(c);
}

void consumer_retry_now(consumer_t *c)
{
    if (!c->retry_pending)
        return;
    evtimer_del(&c->retry_ev);
    backoff_reset(&c->retry_backoff);
    c->retry_pending = false;
    consume_available(c);
}

static void resubscribe(consumer_t *c)
{
    char err[ERRBUF_SIZE];
    /* Reconnecting first, on the client's backoff and past an open breaker, finds the broker
     * back within seconds; the subscription is then the breaker's probe. */
    int rc = mq_try_connect(c->mq);
    if (rc != MQ_OK)
        snprintf(err, sizeof err, "%s", mq_last_error(c->mq));
    else if (c->declare && c->declare(c->mq, c->declare_arg, err, sizeof err) != 0)
        /* NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): rc marks the failure, err says why */
        rc = -1; /* a deleted queue is declared again; a refusal (406) is logged, retried */
    else if (consumer_start(c, err, sizeof err) == 0) {
        log_kv(LOG_INFO, "consumer resubscribed", "queue", c->queue, NULL);
        return;
    }
    int64_t now = now_mono_ms();
    if (now >= c->next_subscribe_log_ms) { /* the broker may be down for a while */
        log_kv(LOG_WARN, "resubscribe failed; retrying", "queue", c->queue, "error", err, NULL);
        c->next_subscribe_log_ms = now + SUBSCRIBE_LOG_EVERY_MS;
    }
}

void consumer_pump(consumer_t *c)
{
    if (c->busy || c->finishing)
        return; /* its fiber uses the client now */
    if (!c->subscribed) {
        resubscribe(c);
        return;
    }
    int r = mq_pump(c->mq);
    if (r < 0)
        lost(c, r);
    else if (r > 0)
        consume_available(c);
    sync_watch(c);
}

bool consumer_busy(const consumer_t *c)
{
    return c->busy;
}

void consumer_finish(consumer_t *c)
{
    evtimer_del(&c->retry_ev);
    if (c->subscribed && !c->retry_pending)
        consume_available(c); /* what is already read or buffered; its fiber may be running */
    c->finishing = true;
    unwatch(c);
}
