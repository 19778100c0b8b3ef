/* MessageClient publishing: properties, pipelined publishes, waiting for their confirms. */
#include <amqp.h> /* before amqp_framing.h, which needs its types */
#include <amqp_framing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "mq/mq_internal.h"
#include "warren/log.h"
#include "warren/signing.h"
#include "warren/utf8.h"

/* A random UUID v4 as the message_id when the caller gives none. */
static void new_message_id(char *buf, size_t len)
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        for (size_t i = 0; i < sizeof r; i++)
            r[i] = (unsigned char)random();
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0],
             r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
             r[14], r[15]);
}

static amqp_table_entry_t text_header(const char *key, const char *value)
{
    return (amqp_table_entry_t){
        .key = amqp_cstring_bytes(key),
        .value = {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes(value)}};
}

/*
 * amqp_basic_publish() cuts a body into frames of the library's frame_max, which client.c raised
 * above the negotiated one for reading. A body that fits one negotiated frame goes through it (one
 * frame either way: the common case, unchanged); a longer one goes out here frame by frame, each
 * at most the negotiated size (frame header 7 bytes, end octet 1).
 */
static int publish_frames(mq_client_t *c, amqp_bytes_t exchange, amqp_bytes_t key, bool mandatory,
                          const amqp_basic_properties_t *p, amqp_bytes_t body)
{
    size_t chunk = (size_t)c->frame_max - 8;
    if (body.len <= chunk)
        return amqp_basic_publish(c->conn, MQ_CHANNEL, exchange, key, mandatory, 0, p, body);
    amqp_basic_publish_t method = {
        .exchange = exchange, .routing_key = key, .mandatory = mandatory};
    int rc = amqp_send_method(c->conn, MQ_CHANNEL, AMQP_BASIC_PUBLISH_METHOD, &method);
    amqp_frame_t f = {.frame_type = AMQP_FRAME_HEADER, .channel = MQ_CHANNEL};
    f.payload.properties.class_id = AMQP_BASIC_CLASS;
    f.payload.properties.body_size = body.len;
    f.payload.properties.decoded = (void *)p;
    if (rc == AMQP_STATUS_OK)
        rc = amqp_send_frame(c->conn, &f);
    for (size_t off = 0; rc == AMQP_STATUS_OK && off < body.len; off += chunk) {
        amqp_frame_t b = {.frame_type = AMQP_FRAME_BODY, .channel = MQ_CHANNEL};
        b.payload.body_fragment.len = body.len - off < chunk ? body.len - off : chunk;
        b.payload.body_fragment.bytes = (char *)body.bytes + off;
        rc = amqp_send_frame(c->conn, &b);
    }
    return rc;
}

static int send_one(mq_client_t *c, const mq_message_t *m, const char *message_id)
{
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
               AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_APP_ID_FLAG;
    p.content_type = amqp_cstring_bytes("application/json");
    p.delivery_mode = 2; /* persistent */
    p.message_id = amqp_cstring_bytes(message_id);
    p.timestamp = (uint64_t)(now_wall_ms() / 1000);
    p.app_id = amqp_cstring_bytes(c->app_id);
    if (c->user[0]) { /* the broker refuses any other: a report cannot claim another sender */
        p._flags |= AMQP_BASIC_USER_ID_FLAG;
        p.user_id = amqp_cstring_bytes(c->user);
    }
    if (m->correlation_id) {
        p._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
        p.correlation_id = amqp_cstring_bytes(m->correlation_id);
    }
    if (m->type) {
        p._flags |= AMQP_BASIC_TYPE_FLAG;
        p.type = amqp_cstring_bytes(m->type);
    }
    char expiration[24];
    if (m->expiration_ms > 0) {
        snprintf(expiration, sizeof expiration, "%lld", (long long)m->expiration_ms);
        p._flags |= AMQP_BASIC_EXPIRATION_FLAG;
        p.expiration = amqp_cstring_bytes(expiration);
    }
    /* Headers name the execution for people browsing queues in the management UI. */
    amqp_table_entry_t headers[6];
    int n = 0;
    char key_id[SIGN_KEY_ID_MAX + 1], sig[SIGN_HEX_LEN + 1];
    if (sign_active() && sign_compute(sign_active(), m->type, message_id, m->body, m->body_len,
                                      key_id, sig) == 0) { /* docs/security.md */
        headers[n++] = text_header(SIGN_HEADER_KEY_ID, key_id);
        headers[n++] = text_header(SIGN_HEADER_SIGNATURE, sig);
    }
    if (m->execution_id)
        headers[n++] = text_header("execution_id", m->execution_id);
    if (m->attempt > 0)
        headers[n++] = (amqp_table_entry_t){
            .key = amqp_cstring_bytes("attempt"),
            .value = {.kind = AMQP_FIELD_KIND_I32, .value.i32 = m->attempt}};
    if (m->action_ref)
        headers[n++] = text_header("action_ref", m->action_ref);
    /* warren's own count of manual redrives (docs/dead-letters.md); x-death is the broker's */
    if (m->redrive_count > 0)
        headers[n++] = (amqp_table_entry_t){
            .key = amqp_cstring_bytes("redrive_count"),
            .value = {.kind = AMQP_FIELD_KIND_I32, .value.i32 = m->redrive_count}};
    if (n > 0) {
        p._flags |= AMQP_BASIC_HEADERS_FLAG;
        p.headers = (amqp_table_t){.num_entries = n, .entries = headers};
    }
    amqp_bytes_t body = {.len = m->body_len, .bytes = (void *)m->body};
    amqp_bytes_t exchange = amqp_cstring_bytes(m->exchange ? m->exchange : "");
    amqp_bytes_t key = amqp_cstring_bytes(m->routing_key ? m->routing_key : "");
    return publish_frames(c, exchange, key, m->mandatory, &p, body);
}

/* Write every message; stops at the first connection problem. */
static void send_all(mq_client_t *c, mq_publish_wait_t *w, int64_t deadline)
{
    for (size_t i = 0; i < w->n; i++) {
        const mq_message_t *m = &w->msgs[i];
        if (!mq_connected(c) || mq_wait_writable(c, m->body_len, deadline) != MQ_OK)
            return;
        if (m->message_id)
            snprintf(w->ids[i], sizeof w->ids[i], "%s", m->message_id);
        else
            new_message_id(w->ids[i], sizeof w->ids[i]);
        w->tags[i] = confirm_track(&c->confirms, w->first_cookie + i);
        if (w->tags[i] == UINT64_MAX) {
            mq_set_error(c, "out of memory tracking a publish");
            return;
        }
        int rc = send_one(c, m, w->ids[i]);
        if (rc != AMQP_STATUS_OK) {
            mq_connection_lost(c, amqp_error_string2(rc));
            return;
        }
        w->sent = i + 1;
    }
}

static bool all_confirmed(mq_client_t *c, mq_publish_wait_t *w, size_t *from)
{
    while (*from < w->sent &&
           confirm_result_cookie(&c->confirms, w->first_cookie + *from) != CONFIRM_PENDING)
        (*from)++;
    return *from == w->sent;
}

static int status_of(confirm_result_t r, const mq_publish_wait_t *w)
{
    switch (r) {
    case CONFIRM_ACKED: return MQ_OK;
    case CONFIRM_NACKED: return MQ_ERR_NACKED;
    case CONFIRM_RETURNED: return MQ_ERR_RETURNED;
    case CONFIRM_PENDING: return MQ_ERR_TIMEOUT;
    /* Written, then the channel or the connection went. A channel the broker closed was closed
     * for a publish it refused (404 no exchange: the ones after it were discarded too); a lost
     * connection may have taken the confirm with it, not the message. */
    case CONFIRM_LOST:
        return w->lost_status == MQ_ERR_CLOSED_BY_BROKER ? MQ_ERR_CLOSED_BY_BROKER
                                                         : MQ_ERR_UNCONFIRMED;
    case CONFIRM_UNKNOWN: break;
    }
    return MQ_ERR_CONNECTION;
}

/* Each message's status into results; logs the first failure. Returns it, or MQ_OK. */
static int collect_results(mq_client_t *c, const mq_publish_wait_t *w, int *results)
{
    int first = MQ_OK;
    for (size_t i = 0; i < w->n; i++) {
        bool sent = i < w->sent;
        if (sent)
            results[i] = status_of(confirm_result_cookie(&c->confirms, w->first_cookie + i), w);
        else /* never written */
            results[i] = MQ_ERR_CONNECTION;
        if (results[i] == MQ_OK || first != MQ_OK)
            continue;
        first = results[i];
        if (first == MQ_ERR_TIMEOUT) /* the message may still arrive: outcome unknown */
            mq_set_error(c, "no confirm within %d ms", c->opts.publish_timeout_ms);
        else if (first == MQ_ERR_UNCONFIRMED)
            mq_set_error(c, "connection lost after the write, before the confirm: %.*s",
                         utf8_prec(c->last_error, 400), c->last_error);
        else if (first == MQ_ERR_NACKED)
            mq_set_error(c, "nacked by the broker");
        log_kv(LOG_WARN, "publish failed", "status", mq_status_name(first), "exchange",
               w->msgs[i].exchange, "routing_key", w->msgs[i].routing_key, "message_id",
               sent ? w->ids[i] : w->msgs[i].message_id, "execution_id", w->msgs[i].execution_id,
               "error", c->last_error, NULL);
    }
    return first;
}

bool mq_held(const mq_client_t *c)
{
    return fiber_lock_held(&c->lock);
}

bool mq_blocked(const mq_client_t *c)
{
    return c->blocked;
}

/* Publish and wait for confirms, all within publish_timeout_ms. On a fiber both waits (room in
 * the socket, the confirms) let the loop run. */
static int publish_wait(mq_client_t *c, mq_publish_wait_t *w, int *results)
{
    int64_t deadline = now_mono_ms() + c->opts.publish_timeout_ms;
    w->lost_status = MQ_ERR_CONNECTION;
    w->first_cookie = c->publish_seq;
    c->publish_seq += w->n;
    c->waiting = w;
    send_all(c, w, deadline);
    size_t from = 0;
    while (!all_confirmed(c, w, &from))
        if (mq_read_frame(c, deadline) <= 0)
            break;
    c->waiting = NULL;
    int first = collect_results(c, w, results);
    confirm_collect(&c->confirms);
    return first;
}

/* Failures that say the broker is unavailable; RETURNED / CLOSED_BY_BROKER are its answers. */
static bool breaker_failure(const int *results, size_t n)
{
    for (size_t i = 0; i < n; i++)
        switch (results[i]) {
        case MQ_ERR_CONNECTION:
        case MQ_ERR_TIMEOUT:
        case MQ_ERR_UNCONFIRMED:
        case MQ_ERR_NACKED: return true;
        }
    return false;
}

static int fill(int *results, size_t n, int status)
{
    for (size_t i = 0; i < n; i++)
        results[i] = status;
    return status;
}

/* Before any I/O: the breaker, a connection, a drained inbox (a channel.close may be waiting)
 * and no resource alarm. MQ_OK or the status every message gets. */
static int publish_ready(mq_client_t *c, bool probe)
{
    /* Draining first also finds a connection that died while idle; then reconnect at once. */
    if (mq_connected(c))
        (void)mq_drain(c);
    if (mq_ensure_connected(c, probe) != MQ_OK)
        return MQ_ERR_CONNECTION;
    if (c->blocked) {
        mq_set_error(c, "connection blocked by the broker (resource alarm)");
        return MQ_ERR_CONNECTION;
    }
    return MQ_OK;
}

static int publish_held(mq_client_t *c, const mq_message_t *msgs, size_t n, int *results);

int mq_publish_batch(mq_client_t *c, const mq_message_t *msgs, size_t n, int *results)
{
    if (n == 0)
        return MQ_OK;
    if (!fiber_lock(&c->lock, now_mono_ms() + c->opts.publish_timeout_ms)) {
        mq_set_error(c, "the client stayed busy with another publish");
        return fill(results, n, MQ_ERR_CONNECTION);
    }
    int rc = publish_held(c, msgs, n, results);
    fiber_unlock(&c->lock);
    return rc;
}

static int publish_held(mq_client_t *c, const mq_message_t *msgs, size_t n, int *results)
{
    if (!breaker_allow(&c->breaker, now_mono_ms())) {
        mq_set_error(c, "circuit breaker open");
        return fill(results, n, MQ_ERR_BREAKER_OPEN);
    }
    int rc = publish_ready(c, c->breaker.state == BREAKER_HALF_OPEN);
    if (rc != MQ_OK) {
        breaker_record_failure(&c->breaker, now_mono_ms());
        return fill(results, n, rc);
    }
    mq_publish_wait_t w = {.msgs = msgs, .n = n};
    w.ids = calloc(n, sizeof *w.ids);
    w.tags = malloc(n * sizeof *w.tags);
    if (!w.ids || !w.tags) {
        free(w.ids);
        free(w.tags);
        mq_set_error(c, "out of memory");
        breaker_record_failure(&c->breaker, now_mono_ms());
        return fill(results, n, MQ_ERR_CONNECTION);
    }
    rc = publish_wait(c, &w, results);
    free(w.ids);
    free(w.tags);
    if (breaker_failure(results, n))
        breaker_record_failure(&c->breaker, now_mono_ms());
    else
        breaker_record_success(&c->breaker, now_mono_ms());
    return rc;
}

int mq_publish(mq_client_t *c, const mq_message_t *m)
{
    int result;
    return mq_publish_batch(c, m, 1, &result);
}
