/* MessageClient frame handling: confirms, returns, deliveries and asynchronous broker methods. */
#include <amqp.h> /* before amqp_framing.h, which needs its types */
#include <amqp_framing.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mq/body.h"
#include "mq/mq_internal.h"
#include "warren/evloop.h"
#include "warren/log.h"
#include "warren/utf8.h"

/* Drain at most this many frames per call so a flood of deliveries cannot starve the caller. */
#define DRAIN_MAX 1024
/* A fiber waiting for a frame looks at the library's buffers this often (TLS). */
#define FIBER_SLICE_MS 20

static char *dup_bytes(amqp_bytes_t b)
{
    char *s = malloc(b.len + 1);
    if (!s)
        return NULL;
    if (b.len)
        memcpy(s, b.bytes, b.len);
    s[b.len] = '\0';
    return s;
}

/* An optional string property: NULL when absent; *oom set when present but not copied. */
static char *dup_prop(const amqp_basic_properties_t *p, amqp_flags_t flag, amqp_bytes_t b,
                      bool *oom)
{
    if (!(p->_flags & flag))
        return NULL;
    char *s = dup_bytes(b);
    if (!s)
        *oom = true;
    return s;
}

/* A delivery as allocated here: what callers see, then the rabbitmq-c envelope that its body
 * and headers point into, which they never see. */
typedef struct delivery_rec {
    mq_delivery_t d; /* first: a mq_delivery_t * is a delivery_rec_t * */
    amqp_envelope_t env;
} delivery_rec_t;

void mq_free_delivery(mq_client_t *c, mq_delivery_t *d)
{
    (void)c;
    if (!d)
        return;
    delivery_rec_t *rec = (delivery_rec_t *)d;
    free(d->exchange);
    free(d->routing_key);
    free(d->consumer_tag);
    free(d->message_id);
    free(d->correlation_id);
    free(d->type);
    free(d->content_type);
    free(d->user_id);
    amqp_destroy_envelope(&rec->env);
    free(rec);
}

void mq_oversized_text(const mq_delivery_t *d, char *buf, size_t len)
{
    snprintf(buf, len,
             "body of %" PRIu64 " bytes exceeds message_queue.max_body_bytes (%zu); only its first "
             "%zu bytes were kept",
             d->body_size, d->body_limit, d->body_len);
}

/* A message's content as read here: its properties in msg.pool, its body (or the body's prefix
 * when it is over the limit) malloc'd, as amqp_destroy_message() frees them. */
typedef struct content {
    amqp_message_t msg;
    uint64_t size; /* announced */
    bool cut;      /* over the limit: msg.body is the prefix */
} content_t;

/* Takes over env and the content (also on failure). */
static mq_delivery_t *delivery_from(mq_client_t *c, amqp_envelope_t *env, const content_t *ct)
{
    delivery_rec_t *rec = calloc(1, sizeof *rec);
    env->message = ct->msg;
    if (!rec) {
        amqp_destroy_envelope(env);
        return NULL;
    }
    rec->env = *env;
    mq_delivery_t *d = &rec->d;
    const amqp_basic_properties_t *p = &rec->env.message.properties;
    bool oom = false;
    d->delivery_tag = (c->channel_gen << MQ_TAG_BITS) | (env->delivery_tag & MQ_TAG_MASK);
    d->redelivered = env->redelivered;
    d->exchange = dup_bytes(env->exchange);
    d->routing_key = dup_bytes(env->routing_key);
    d->consumer_tag = dup_bytes(env->consumer_tag);
    oom = !d->exchange || !d->routing_key || !d->consumer_tag;
    d->message_id = dup_prop(p, AMQP_BASIC_MESSAGE_ID_FLAG, p->message_id, &oom);
    d->correlation_id = dup_prop(p, AMQP_BASIC_CORRELATION_ID_FLAG, p->correlation_id, &oom);
    d->type = dup_prop(p, AMQP_BASIC_TYPE_FLAG, p->type, &oom);
    d->content_type = dup_prop(p, AMQP_BASIC_CONTENT_TYPE_FLAG, p->content_type, &oom);
    d->user_id = dup_prop(p, AMQP_BASIC_USER_ID_FLAG, p->user_id, &oom);
    d->timestamp = (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) ? (int64_t)p->timestamp : 0;
    d->body = rec->env.message.body.bytes;
    d->body_len = rec->env.message.body.len;
    d->body_size = ct->size;
    d->oversized = ct->cut;
    d->body_limit = c->opts.max_body_bytes;
    if (p->_flags & AMQP_BASIC_HEADERS_FLAG)
        d->headers = p->headers;
    if (oom) {
        mq_free_delivery(c, d);
        return NULL;
    }
    return d;
}

void mq_stash_push(mq_client_t *c, mq_delivery_t *d)
{
    if (c->stash_head > 0 && c->stash_len == c->stash_cap) {
        size_t live = c->stash_len - c->stash_head;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
        memmove(c->stash, c->stash + c->stash_head, live * sizeof *c->stash);
        c->stash_len -= c->stash_head;
        c->stash_head = 0;
    }
    if (c->stash_len == c->stash_cap) {
        size_t cap = c->stash_cap ? c->stash_cap * 2 : 16;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
        mq_delivery_t **grown = realloc(c->stash, cap * sizeof *grown);
        if (!grown) {
            /* Unacked, so the broker redelivers it once the connection is gone. */
            log_kv(LOG_ERROR, "out of memory holding a delivery; reconnecting", NULL);
            mq_free_delivery(c, d);
            mq_connection_lost(c, "out of memory");
            return;
        }
        c->stash = grown;
        c->stash_cap = cap;
    }
    c->stash[c->stash_len++] = d;
}

mq_delivery_t *mq_stash_pop(mq_client_t *c)
{
    if (c->stash_head == c->stash_len)
        return NULL;
    mq_delivery_t *d = c->stash[c->stash_head++];
    if (c->stash_head == c->stash_len)
        c->stash_head = c->stash_len = 0;
    return d;
}

void mq_stash_discard(mq_client_t *c)
{
    size_t n = c->stash_len - c->stash_head;
    mq_delivery_t *d;
    while ((d = mq_stash_pop(c)) != NULL)
        mq_free_delivery(c, d);
    if (n > 0) {
        char count[24];
        snprintf(count, sizeof count, "%zu", n);
        log_kv(LOG_INFO, "dropped unread deliveries of a closed channel; the broker requeues them",
               "count", count, NULL);
    }
}

static void handle_method(mq_client_t *c, const amqp_frame_t *f);
static void on_channel_close(mq_client_t *c, const amqp_frame_t *f);

/* The content of a delivery or return cannot be read to its end: the connection is out of step. */
static void content_lost(mq_client_t *c, const char *what, const char *why)
{
    char text[ERRBUF_SIZE];
    snprintf(text, sizeof text, "reading %s: %s", what, why);
    mq_connection_lost(c, text);
}

/*
 * The next frame of a message's content on channel ch, each within the RPC bound. Methods on
 * other channels (the connection's on 0: blocked, close) may come between content frames and
 * are handled as usual; heartbeats the library answers itself. 1 with a header or body frame in
 * *f; 0 when the connection or the channel is gone (handled).
 */
static int content_frame(mq_client_t *c, amqp_channel_t ch, amqp_frame_t *f, const char *what)
{
    for (;;) {
        struct timeval tv = evloop_tv(c->opts.connect_timeout_ms);
        int rc = amqp_simple_wait_frame_noblock(c->conn, f, &tv);
        if (rc != AMQP_STATUS_OK) {
            char why[96];
            snprintf(why, sizeof why, "no frame of it for %d ms", c->opts.connect_timeout_ms);
            content_lost(c, what, rc == AMQP_STATUS_TIMEOUT ? why : amqp_error_string2(rc));
            return 0;
        }
        bool method = f->frame_type == AMQP_FRAME_METHOD;
        if (f->channel != ch && method) {
            handle_method(c, f);
            if (!c->conn)
                return 0;
            amqp_maybe_release_buffers_on_channel(c->conn, f->channel);
            continue;
        }
        if (f->channel == ch && !method)
            return 1;
        if (method && f->payload.method.id == AMQP_CHANNEL_CLOSE_METHOD)
            on_channel_close(c, f);
        else
            content_lost(c, what, "a frame that is no part of it came in between");
        return 0;
    }
}

/* A header frame's properties point into the channel's frame pool, which is recycled while the
 * body is read: copy them, strings and headers, into the message's own pool. */
static int copy_properties(const amqp_basic_properties_t *from, amqp_message_t *msg)
{
    amqp_basic_properties_t *to = &msg->properties;
    *to = *from;
    struct {
        amqp_flags_t flag;
        amqp_bytes_t *value;
    } strings[] = {
        {AMQP_BASIC_CONTENT_TYPE_FLAG, &to->content_type},
        {AMQP_BASIC_CONTENT_ENCODING_FLAG, &to->content_encoding},
        {AMQP_BASIC_CORRELATION_ID_FLAG, &to->correlation_id},
        {AMQP_BASIC_REPLY_TO_FLAG, &to->reply_to},
        {AMQP_BASIC_EXPIRATION_FLAG, &to->expiration},
        {AMQP_BASIC_MESSAGE_ID_FLAG, &to->message_id},
        {AMQP_BASIC_TYPE_FLAG, &to->type},
        {AMQP_BASIC_USER_ID_FLAG, &to->user_id},
        {AMQP_BASIC_APP_ID_FLAG, &to->app_id},
        {AMQP_BASIC_CLUSTER_ID_FLAG, &to->cluster_id},
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        amqp_bytes_t in_frame = *strings[i].value;
        if (!(from->_flags & strings[i].flag) || in_frame.len == 0)
            continue;
        amqp_pool_alloc_bytes(&msg->pool, in_frame.len, strings[i].value);
        if (!strings[i].value->bytes)
            return -1;
        memcpy(strings[i].value->bytes, in_frame.bytes, in_frame.len);
    }
    if ((from->_flags & AMQP_BASIC_HEADERS_FLAG) &&
        amqp_table_clone(&from->headers, &to->headers, &msg->pool) != AMQP_STATUS_OK)
        return -1;
    return 0;
}

/* The body frames up to the size the header announced, into acc; the frame pool is recycled
 * after each one, so memory stays flat however big the body is. 0, or -1 (handled). */
static int read_body(mq_client_t *c, amqp_channel_t ch, body_acc_t *acc, const char *what)
{
    while (!body_acc_complete(acc)) {
        amqp_frame_t f;
        if (!content_frame(c, ch, &f, what))
            return -1;
        const char *bad = NULL;
        if (f.frame_type != AMQP_FRAME_BODY)
            bad = "a frame other than a body frame inside the body";
        else if (body_acc_add(acc, f.payload.body_fragment.bytes, f.payload.body_fragment.len))
            bad = "more body bytes than its header announced";
        if (bad) {
            content_lost(c, what, bad);
            return -1;
        }
        amqp_maybe_release_buffers_on_channel(c->conn, ch);
    }
    return 0;
}

/*
 * After a basic.deliver or basic.return on ch: the header frame, then the body. A body over
 * max_body_bytes is never held whole, whatever its header announces: its frames are read and
 * dropped as they come, keeping the first MQ_BODY_PREFIX_BYTES (ct->cut). 0 with ct filled (free
 * it with amqp_destroy_message), or -1 when the connection or the channel went (handled).
 */
static int read_content(mq_client_t *c, amqp_channel_t ch, content_t *ct, const char *what)
{
    amqp_frame_t f;
    body_acc_t acc;
    memset(ct, 0, sizeof *ct);
    if (!content_frame(c, ch, &f, what))
        return -1;
    if (f.frame_type != AMQP_FRAME_HEADER) {
        content_lost(c, what, "a body frame before the header frame");
        return -1;
    }
    init_amqp_pool(&ct->msg.pool, 4096);
    ct->size = f.payload.properties.body_size;
    if (copy_properties(f.payload.properties.decoded, &ct->msg) != 0 ||
        body_acc_start(&acc, ct->size, c->opts.max_body_bytes, MQ_BODY_PREFIX_BYTES) != 0) {
        empty_amqp_pool(&ct->msg.pool);
        content_lost(c, what, "out of memory");
        return -1;
    }
    amqp_maybe_release_buffers_on_channel(c->conn, ch);
    if (read_body(c, ch, &acc, what) != 0) {
        body_acc_free(&acc);
        empty_amqp_pool(&ct->msg.pool);
        return -1;
    }
    ct->cut = acc.cut;
    ct->msg.body = amqp_empty_bytes;
    size_t len;
    void *body = body_acc_take(&acc, &len);
    if (len > 0)
        ct->msg.body = (amqp_bytes_t){.len = len, .bytes = body};
    else
        free(body);
    return 0;
}

static void on_deliver(mq_client_t *c, const amqp_frame_t *f)
{
    const amqp_basic_deliver_t *m = f->payload.method.decoded;
    amqp_envelope_t env;
    memset(&env, 0, sizeof env);
    env.channel = f->channel;
    env.delivery_tag = m->delivery_tag;
    env.redelivered = m->redelivered;
    env.consumer_tag = amqp_bytes_malloc_dup(m->consumer_tag);
    env.exchange = amqp_bytes_malloc_dup(m->exchange);
    env.routing_key = amqp_bytes_malloc_dup(m->routing_key);
    content_t ct;
    if (read_content(c, f->channel, &ct, "a delivery") != 0) {
        amqp_bytes_free(env.consumer_tag);
        amqp_bytes_free(env.exchange);
        amqp_bytes_free(env.routing_key);
        return;
    }
    mq_delivery_t *d = delivery_from(c, &env, &ct);
    if (!d) {
        mq_connection_lost(c, "out of memory reading a delivery");
        return;
    }
    mq_stash_push(c, d);
}

/* basic.return names no delivery tag: find the publish by the message_id we sent. */
static void mark_returned(mq_client_t *c, const char *message_id)
{
    mq_publish_wait_t *w = c->waiting;
    for (size_t i = 0; w && i < w->sent; i++) {
        bool pending = confirm_result(&c->confirms, w->tags[i]) == CONFIRM_PENDING;
        if (pending && strcmp(w->ids[i], message_id) == 0) {
            confirm_on_return(&c->confirms, w->tags[i]);
            return;
        }
    }
    log_kv(LOG_WARN, "basic.return for no publish in progress", "message_id", message_id, NULL);
}

static void on_return(mq_client_t *c, const amqp_frame_t *f)
{
    const amqp_basic_return_t *m = f->payload.method.decoded;
    char code[16], *exchange = dup_bytes(m->exchange), *key = dup_bytes(m->routing_key);
    char *text = dup_bytes(m->reply_text);
    snprintf(code, sizeof code, "%u", m->reply_code);
    content_t ct;
    if (read_content(c, f->channel, &ct, "a returned message") == 0) {
        const amqp_basic_properties_t *p = &ct.msg.properties;
        bool oom = false;
        char *id = dup_prop(p, AMQP_BASIC_MESSAGE_ID_FLAG, p->message_id, &oom);
        log_kv(LOG_WARN, "publish returned unroutable", "reply_code", code, "reply_text", text,
               "exchange", exchange, "routing_key", key, "message_id", id, NULL);
        mq_set_error(c, "returned: %s %.*s", code, utf8_prec(text ? text : "", 200),
                     text ? text : "");
        mark_returned(c, id ? id : "");
        free(id);
        amqp_destroy_message(&ct.msg);
    }
    free(exchange);
    free(key);
    free(text);
}

/* A close method from the broker, described like a failed RPC's reply. */
static void describe_close(const amqp_frame_t *f, char *why, size_t len)
{
    amqp_rpc_reply_t r = {.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION, .reply = f->payload.method};
    mq_describe_reply(r, why, len);
}

static void on_channel_close(mq_client_t *c, const amqp_frame_t *f)
{
    char why[ERRBUF_SIZE];
    describe_close(f, why, sizeof why);
    amqp_channel_close_ok_t ok = {0};
    if (amqp_send_method(c->conn, f->channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) !=
        AMQP_STATUS_OK) {
        mq_connection_lost(c, "sending channel.close-ok failed");
        return;
    }
    (void)mq_channel_closed(c, why);
}

static void on_connection_close(mq_client_t *c, const amqp_frame_t *f)
{
    char why[ERRBUF_SIZE];
    describe_close(f, why, sizeof why);
    amqp_connection_close_ok_t ok = {0};
    (void)amqp_send_method(c->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
    mq_connection_lost(c, why);
}

static void on_cancel(mq_client_t *c, const amqp_frame_t *f)
{
    const amqp_basic_cancel_t *m = f->payload.method.decoded;
    char *tag = dup_bytes(m->consumer_tag);
    log_kv(LOG_WARN, "consumer cancelled by broker (queue deleted?)", "consumer_tag", tag, NULL);
    if (c->consumer_tag && tag && strcmp(tag, c->consumer_tag) == 0) {
        mq_set_error(c, "consumer cancelled by broker (queue deleted?)");
        mq_consumer_lost(c, MQ_ERR_CANCELLED);
    }
    free(tag);
}

static void on_blocked(mq_client_t *c, const amqp_frame_t *f, bool blocked)
{
    c->blocked = blocked;
    if (blocked) {
        const amqp_connection_blocked_t *m = f->payload.method.decoded;
        char *reason = dup_bytes(m->reason);
        log_kv(LOG_WARN, "connection blocked by broker (resource alarm)", "reason", reason, NULL);
        free(reason);
    } else {
        log_kv(LOG_INFO, "connection unblocked by broker", NULL);
    }
}

static void handle_method(mq_client_t *c, const amqp_frame_t *f)
{
    switch (f->payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
        const amqp_basic_ack_t *m = f->payload.method.decoded;
        confirm_on_ack(&c->confirms, m->delivery_tag, m->multiple);
        break;
    }
    case AMQP_BASIC_NACK_METHOD: {
        const amqp_basic_nack_t *m = f->payload.method.decoded;
        confirm_on_nack(&c->confirms, m->delivery_tag, m->multiple);
        break;
    }
    case AMQP_BASIC_RETURN_METHOD: on_return(c, f); break;
    case AMQP_BASIC_DELIVER_METHOD: on_deliver(c, f); break;
    case AMQP_BASIC_CANCEL_METHOD: on_cancel(c, f); break;
    case AMQP_CHANNEL_CLOSE_METHOD: on_channel_close(c, f); break;
    case AMQP_CONNECTION_CLOSE_METHOD: on_connection_close(c, f); break;
    case AMQP_CONNECTION_BLOCKED_METHOD: on_blocked(c, f, true); break;
    case AMQP_CONNECTION_UNBLOCKED_METHOD: on_blocked(c, f, false); break;
    default:
        log_kv(LOG_DEBUG, "ignoring broker method", "method",
               amqp_method_name(f->payload.method.id), NULL);
        break;
    }
}

/* A fiber's wait for the next frame: the socket as a fiber wait, then a read that does not
 * block. In slices, so that bytes a TLS library holds (invisible to the socket) are read too. */
static int wait_frame_fiber(mq_client_t *c, amqp_frame_t *f, int64_t deadline_ms)
{
    for (;;) {
        struct timeval now_tv = {0, 0};
        int rc = amqp_simple_wait_frame_noblock(c->conn, f, &now_tv);
        if (rc != AMQP_STATUS_TIMEOUT)
            return rc;
        int64_t now = now_mono_ms();
        if (now >= deadline_ms)
            return rc;
        int64_t until = deadline_ms - now > FIBER_SLICE_MS ? now + FIBER_SLICE_MS : deadline_ms;
        if (fiber_wait_fd(amqp_get_sockfd(c->conn), POLLIN, until) < 0)
            return AMQP_STATUS_TIMEOUT; /* the loop is ending */
    }
}

int mq_read_frame(mq_client_t *c, int64_t deadline_ms)
{
    if (!c->conn)
        return MQ_ERR_CONNECTION;
    amqp_frame_t f;
    int rc;
    if (fiber_active()) {
        rc = wait_frame_fiber(c, &f, deadline_ms);
    } else {
        struct timeval tv = evloop_tv(deadline_ms - now_mono_ms());
        rc = amqp_simple_wait_frame_noblock(c->conn, &f, &tv);
    }
    if (rc == AMQP_STATUS_TIMEOUT)
        return 0;
    if (rc != AMQP_STATUS_OK) {
        mq_connection_lost(c, amqp_error_string2(rc));
        return MQ_ERR_CONNECTION;
    }
    if (f.frame_type == AMQP_FRAME_METHOD)
        handle_method(c, &f);
    else /* content without its method: nothing can use it */
        log_kv(LOG_DEBUG, "ignoring stray content frame", NULL);
    if (!c->conn)
        return MQ_ERR_CONNECTION;
    /* Decoded frames live in per-channel pools; recycle them once handled. */
    amqp_maybe_release_buffers_on_channel(c->conn, 0);
    amqp_maybe_release_buffers_on_channel(c->conn, MQ_CHANNEL);
    return 1;
}

int mq_drain(mq_client_t *c)
{
    int64_t now = now_mono_ms();
    for (int i = 0; i < DRAIN_MAX; i++) {
        int r = mq_read_frame(c, now);
        if (r <= 0)
            return r;
    }
    return 0;
}
