/* MessageClient consuming: subscribe, hand out deliveries, ack/nack, pump the connection. */
#include <amqp.h> /* before amqp_framing.h, which needs its types */
#include <amqp_framing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mq/mq_internal.h"
#include "warren/log.h"

/* basic.consume failed: a channel.close (404 no queue, 403) leaves a usable connection. */
static int consume_refused(mq_client_t *c, char *err, size_t errlen)
{
    int rc = mq_reopen_channel(c, err, errlen);
    if (c->conn && rc == 0) {
        breaker_record_success(&c->breaker, now_mono_ms()); /* the broker answered */
        return MQ_ERR_CLOSED_BY_BROKER;
    }
    breaker_record_failure(&c->breaker, now_mono_ms());
    return MQ_ERR_CONNECTION;
}

static int start_consumer(mq_client_t *c, const char *queue, char *err, size_t errlen)
{
    amqp_basic_consume_ok_t *ok = amqp_basic_consume(c->conn, MQ_CHANNEL, amqp_cstring_bytes(queue),
                                                     amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    if (amqp_get_rpc_reply(c->conn).reply_type != AMQP_RESPONSE_NORMAL || !ok)
        return consume_refused(c, err, errlen);
    c->consumer_tag = strndup(ok->consumer_tag.bytes, ok->consumer_tag.len);
    if (!c->consumer_tag) {
        mq_connection_lost(c, "out of memory");
        snprintf(err, errlen, "out of memory");
        breaker_record_failure(&c->breaker, now_mono_ms());
        return MQ_ERR_CONNECTION;
    }
    c->consume_status = MQ_OK;
    c->consume_event_unseen = false;
    log_kv(LOG_INFO, "consuming", "queue", queue, "consumer_tag", c->consumer_tag, NULL);
    breaker_record_success(&c->breaker, now_mono_ms());
    return MQ_OK;
}

int mq_consume(mq_client_t *c, const char *queue, char *err, size_t errlen)
{
    int64_t now = now_mono_ms();
    if (!breaker_allow(&c->breaker, now)) {
        snprintf(err, errlen, "circuit breaker open (retry in %lld ms)",
                 (long long)breaker_retry_in_ms(&c->breaker, now));
        return MQ_ERR_BREAKER_OPEN;
    }
    if (mq_connected(c))
        (void)mq_drain(c);
    if (mq_ensure_connected(c, c->breaker.state == BREAKER_HALF_OPEN) != MQ_OK) {
        snprintf(err, errlen, "%s", c->last_error);
        breaker_record_failure(&c->breaker, now_mono_ms());
        return MQ_ERR_CONNECTION;
    }
    if (c->consumer_tag) { /* one consumer per client; a repeated call is a no-op */
        breaker_record_success(&c->breaker, now_mono_ms());
        return MQ_OK;
    }
    return start_consumer(c, queue, err, errlen);
}

/* The consumer is gone: say why (once per loss it is "unseen"; the status repeats). */
static int consumer_status(mq_client_t *c)
{
    c->consume_event_unseen = false;
    if (c->consume_error[0])
        mq_set_error(c, "%s", c->consume_error);
    return c->consume_status;
}

int mq_consume_next(mq_client_t *c, int timeout_ms, mq_delivery_t **out)
{
    if ((*out = mq_stash_pop(c)) != NULL)
        return 1;
    if (!c->consumer_tag)
        return consumer_status(c);
    int64_t deadline = now_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        int r = mq_read_frame(c, deadline);
        if ((*out = mq_stash_pop(c)) != NULL)
            return 1;
        if (!c->consumer_tag)
            return consumer_status(c);
        if (r <= 0)
            return r < 0 ? MQ_ERR_CONNECTION : 0;
    }
}

int mq_cancel(mq_client_t *c, char *err, size_t errlen)
{
    if (!c->consumer_tag)
        return MQ_OK;
    amqp_basic_cancel(c->conn, MQ_CHANNEL, amqp_cstring_bytes(c->consumer_tag));
    if (amqp_get_rpc_reply(c->conn).reply_type != AMQP_RESPONSE_NORMAL) {
        /* The channel or the connection went away: the consumer is gone with it. */
        if (mq_reopen_channel(c, err, errlen) != 0)
            return MQ_ERR_CONNECTION;
        return MQ_ERR_CLOSED_BY_BROKER;
    }
    log_kv(LOG_INFO, "consumer cancelled", "consumer_tag", c->consumer_tag, NULL);
    mq_set_error(c, "consumer cancelled on request");
    mq_consumer_lost(c, MQ_ERR_CANCELLED);
    c->consume_event_unseen = false; /* asked for: not news for mq_pump() */
    return MQ_OK;
}

/* A caller's delivery tag -> the broker's, refusing tags of an earlier channel. */
static int broker_tag(mq_client_t *c, uint64_t tag, uint64_t *out)
{
    if (!mq_connected(c)) {
        mq_set_error(c, "not connected: the broker requeues unacked deliveries");
        return MQ_ERR_CONNECTION;
    }
    if ((tag >> MQ_TAG_BITS) != c->channel_gen) {
        mq_set_error(c, "delivery of an earlier channel: the broker has requeued it");
        log_kv(LOG_WARN, "ack/nack refused for a delivery of a closed channel", NULL);
        return MQ_ERR_CONNECTION;
    }
    *out = tag & MQ_TAG_MASK;
    return MQ_OK;
}

static int settle(mq_client_t *c, uint64_t delivery_tag, bool ack, bool flag)
{
    uint64_t tag;
    int rc = broker_tag(c, delivery_tag, &tag);
    if (rc == MQ_OK)
        rc = mq_wait_writable(c, 0, now_mono_ms() + c->opts.publish_timeout_ms);
    if (rc != MQ_OK)
        return rc;
    int sent = ack ? amqp_basic_ack(c->conn, MQ_CHANNEL, tag, flag)
                   : amqp_basic_nack(c->conn, MQ_CHANNEL, tag, 0, flag);
    if (sent != AMQP_STATUS_OK) {
        mq_connection_lost(c, amqp_error_string2(sent));
        return MQ_ERR_CONNECTION;
    }
    return MQ_OK;
}

int mq_ack(mq_client_t *c, uint64_t delivery_tag, bool multiple)
{
    return settle(c, delivery_tag, true, multiple);
}

int mq_nack(mq_client_t *c, uint64_t delivery_tag, bool requeue)
{
    return settle(c, delivery_tag, false, requeue);
}

int mq_pump(mq_client_t *c)
{
    if (!c->conn || mq_drain(c) < 0)
        return MQ_ERR_CONNECTION;
    return (c->stash_head < c->stash_len || c->consume_event_unseen) ? 1 : 0;
}
