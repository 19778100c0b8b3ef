/*
 * MessageClient: the one module that owns a rabbitmq-c connection. Connect with timeouts and
 * capabilities, keep heartbeats alive when pumped, publish with confirms (bounded in time),
 * consume, ack/nack, reconnect. Publish and consume go through the messaging circuit breaker;
 * ack, nack and health checks bypass it. One client per thread: nothing here is shared.
 */
#ifndef WARREN_MQ_H
#define WARREN_MQ_H

#include <amqp.h>
#include "warren/breaker.h"
#include "warren/config.h"

/* Distinct results so callers can tell "broker said no" from "breaker said no". */
typedef enum {
    MQ_OK = 0,
    MQ_ERR_BREAKER_OPEN = -2,     /* fail fast: the breaker is open, nothing was sent */
    MQ_ERR_NACKED = -3,           /* the broker nacked the publish */
    MQ_ERR_RETURNED = -4,         /* mandatory publish was unroutable (basic.return) */
    MQ_ERR_TIMEOUT = -5,          /* no confirm within publish_timeout_ms */
    MQ_ERR_CONNECTION = -6,       /* socket/connection/channel failure; reconnect pending */
    MQ_ERR_CLOSED_BY_BROKER = -7, /* channel.close from the broker (e.g. 404, 406) */
    MQ_ERR_CANCELLED = -8,   /* the broker cancelled our consumer (queue deleted): resubscribe */
    MQ_ERR_UNCONFIRMED = -9, /* written, then the connection died before the broker answered:
                              * the message may have been delivered */
} mq_status_t;

/* "ok", "breaker_open", "nacked", ... for logs and tools. */
const char *mq_status_name(int status);
/* Did a publish with this status perhaps reach its queue? True for MQ_OK and for the unknown
 * outcomes (MQ_ERR_TIMEOUT, MQ_ERR_UNCONFIRMED: written, no answer); false when the broker
 * refused it (nacked, returned, channel closed) or it was never written (connection, breaker). */
bool mq_status_maybe_delivered(int status);

/* TLS for amqps:// URLs (an amqp:// URL ignores it). Files are read at every connect, so
 * renewed certificates are picked up by the next reconnect. NULL or "" means none. */
typedef struct mq_tls {
    const char *ca_file;   /* trusted CAs (PEM); needed when verify_peer */
    const char *cert_file; /* client certificate (PEM); with key_file or not at all */
    const char *key_file;  /* its private key (PEM, unencrypted) */
    bool verify_peer;
    bool verify_hostname;
} mq_tls_t;

/* A body over the limit is never held whole: a delivery keeps only this many first bytes. */
#define MQ_BODY_PREFIX_BYTES 4096
#define MQ_DEFAULT_MAX_BODY_BYTES (1024 * 1024)

/* Zero or negative numbers mean "use the default" (timeouts 5000 ms, breaker 5 / 2 / 30 s,
 * max_body_bytes MQ_DEFAULT_MAX_BODY_BYTES), except heartbeat_s 0 (no heartbeats) and prefetch 0
 * (unlimited). */
typedef struct mq_options {
    const char *url; /* amqp://user:pass@host:port/vhost or amqps://... (TLS, see tls) */
    int heartbeat_s;
    int connect_timeout_ms;
    int publish_timeout_ms;
    int prefetch;
    int breaker_failure_threshold;
    int breaker_success_threshold;
    int breaker_open_timeout_s;
    size_t max_body_bytes; /* a delivered body over this is read and dropped as it arrives */
    const char *app_id;    /* "warren-executor", "warren-worker" */
    mq_tls_t tls;
} mq_options_t;

/* RabbitMQ user names as warren handles them (the broker allows longer ones). */
#define MQ_USER_MAX 255
/* The broker user an AMQP URL logs in as ("guest" when it names none) into buf. 0, or -1 when
 * the URL cannot be parsed or the name does not fit. */
int mq_url_user(const char *url, char *buf, size_t len) WARN_UNUSED;

void mq_options_from_config(mq_options_t *o, const warren_config_t *cfg, const char *app_id);
/* What a connect would refuse before any I/O: an unparsable URL and, for amqps://, TLS files
 * that are missing, unreadable or do not go together (a certificate without its key, an
 * encrypted key). Lets a daemon refuse to start instead of retrying a connect that cannot
 * succeed. 0, or -1 with the reason in err. */
int mq_check_options(const mq_options_t *o, char *err, size_t errlen) WARN_UNUSED;

/* One message to publish. Every publish carries content_type application/json, persistent
 * delivery, a message_id, a timestamp (seconds), app_id and user_id (the broker user the
 * connection logged in as, which RabbitMQ validates); the fields below add the rest. */
typedef struct mq_message {
    const char *exchange;
    const char *routing_key;
    const void *body;
    size_t body_len;
    const char *message_id;     /* NULL: generated */
    const char *correlation_id; /* optional */
    const char *type;           /* message type, e.g. "ExecutionRequested" */
    const char *execution_id;   /* optional; sent as header "execution_id" */
    int attempt;                /* optional (0: none); sent as header "attempt" */
    const char *action_ref;     /* optional; sent as header "action_ref" */
    int redrive_count;          /* optional (0: none); sent as header "redrive_count" */
    bool mandatory;             /* unroutable -> MQ_ERR_RETURNED */
    int64_t expiration_ms;      /* per-message TTL; 0: none */
} mq_message_t;

/* A delivered message. The caller owns it and frees it with mq_free_delivery(); it stays valid
 * across later calls (also after a reconnect). delivery_tag is opaque: it also names the channel
 * incarnation, so mq_ack() refuses a tag from a channel that has been reopened since (the broker
 * has requeued that message) instead of acking a different message. An oversized delivery (body
 * over max_body_bytes) holds only the first MQ_BODY_PREFIX_BYTES of its body; the rest was read
 * off the connection and dropped as it came, so it cannot be used, only recorded and settled. */
typedef struct mq_delivery {
    uint64_t delivery_tag;
    bool redelivered;
    char *exchange, *routing_key, *consumer_tag;
    char *message_id, *correlation_id, *type, *content_type;
    char *user_id;     /* the publisher's broker user as RabbitMQ validated it; NULL if absent */
    int64_t timestamp; /* seconds; 0 if absent */
    void *body;
    size_t body_len;      /* bytes at body: the whole body, or only its prefix when oversized */
    uint64_t body_size;   /* the body's size as the broker announced it */
    bool oversized;       /* body_size > body_limit: body is the prefix */
    size_t body_limit;    /* the client's max_body_bytes when it was read */
    amqp_table_t headers; /* raw headers (x-death etc.); valid until freed */
} mq_delivery_t;

typedef struct mq_client mq_client_t;

/* Create (no I/O yet); copies what it keeps from opts. Caller frees with mq_destroy(). */
mq_client_t *mq_new(const mq_options_t *opts);
void mq_destroy(mq_client_t *c);
/* Take what may change while connected from cfg (a reload): the breaker's thresholds and open
 * timeout. The rest of the options stay as mq_new got them. c NULL: nothing. */
void mq_reconfigure(mq_client_t *c, const warren_config_t *cfg);
/* Connect, log in (capabilities consumer_cancel_notify, connection.blocked), open channel,
 * confirm.select, basic.qos(prefetch). Idempotent when connected. */
int mq_connect(mq_client_t *c, char *err, size_t errlen) WARN_UNUSED;
void mq_disconnect(mq_client_t *c);
/* Connect unless connected or the reconnect backoff says to wait (then MQ_ERR_CONNECTION
 * without trying). Bypasses the breaker: while it is open, this is how a client finds the
 * broker back, and a successful connect half-opens it so the next call probes at once. */
int mq_try_connect(mq_client_t *c) WARN_UNUSED;
bool mq_connected(const mq_client_t *c);
/* Socket fd for an event loop, -1 when disconnected. */
int mq_fd(const mq_client_t *c);

/*
 * Publish one message and wait for its confirm. Returns mq_status_t. Success only on a
 * basic.ack; the whole call (write + confirm) is bounded by publish_timeout_ms. MQ_ERR_TIMEOUT
 * and MQ_ERR_UNCONFIRMED mean written without an answer (the outcome is unknown);
 * MQ_ERR_CONNECTION means nothing was written. Without a
 * connection it reconnects first (not before the reconnect backoff has passed; a half-open
 * breaker probe skips the backoff). Breaker: MQ_ERR_CONNECTION, MQ_ERR_TIMEOUT,
 * MQ_ERR_UNCONFIRMED and MQ_ERR_NACKED count as failures; RETURNED and CLOSED_BY_BROKER are answers from a healthy
 * broker (the caller's routing is wrong) and count as successes.
 */
int mq_publish(mq_client_t *c, const mq_message_t *m) WARN_UNUSED;
/* Publish n messages pipelined, then wait for all confirms; results[i] gets each status.
 * Returns MQ_OK when all succeeded, else the first failure. */
int mq_publish_batch(mq_client_t *c, const mq_message_t *msgs, size_t n, int *results) WARN_UNUSED;

/*
 * On a fiber (warren/fiber.h), a publish waits for room in the socket and for its confirms
 * without holding up the loop. A client is used by one fiber at a time: mq_publish_batch takes
 * the client's lock for its whole call (waiting at most publish_timeout_ms for it, else every
 * message gets MQ_ERR_CONNECTION: nothing was written). A caller that reads the connection
 * otherwise (mq_pump from a timer) leaves the client alone while mq_held says a fiber has it.
 */
bool mq_held(const mq_client_t *c);
/* The broker blocked this connection (connection.blocked: a resource alarm): publishes are
 * refused until it unblocks. */
bool mq_blocked(const mq_client_t *c);

/* Start consuming `queue` (manual ack), connecting first if needed. Goes through the breaker.
 * Returns MQ_OK or a negative mq_status_t (MQ_ERR_CLOSED_BY_BROKER: e.g. 404 no queue),
 * with the reason in err. Also the way to resubscribe after mq_consume_next() failed. */
int mq_consume(mq_client_t *c, const char *queue, char *err, size_t errlen) WARN_UNUSED;
/*
 * Wait up to timeout_ms (0: only what is buffered or readable now) for the next delivery.
 * Returns 1 with *out filled, 0 on timeout, or a negative mq_status_t when the consumer is
 * gone: MQ_ERR_CANCELLED (basic.cancel, e.g. queue deleted), MQ_ERR_CLOSED_BY_BROKER (channel
 * closed, e.g. consumer_timeout) or MQ_ERR_CONNECTION, with the reason in mq_last_error(). The
 * status repeats until mq_consume() resubscribes; deliveries already read are handed out
 * first. Services heartbeats and async frames while waiting. In an event loop, on readable
 * call it with 0 until it returns 0: the library buffers frames and the fd may not become
 * readable again for them.
 */
int mq_consume_next(mq_client_t *c, int timeout_ms, mq_delivery_t **out) WARN_UNUSED;
void mq_free_delivery(mq_client_t *c, mq_delivery_t *d);
/* Why an oversized delivery cannot be used, for a log line or a dead letter's error: "body of N
 * bytes exceeds message_queue.max_body_bytes (M); only its first K bytes were kept". */
void mq_oversized_text(const mq_delivery_t *d, char *buf, size_t len);
/*
 * Stop consuming: basic.cancel, waiting (bounded) for cancel-ok. Deliveries the broker sent
 * before it saw the cancel are still handed out by mq_consume_next(), which then returns
 * MQ_ERR_CANCELLED; they can be acked or nacked as usual, since the channel stays open.
 * MQ_OK also when not consuming. Bypasses the breaker.
 */
int mq_cancel(mq_client_t *c, char *err, size_t errlen) WARN_UNUSED;
/* Ack / nack bypass the breaker and never reconnect. MQ_ERR_CONNECTION when the delivery's
 * channel is gone (the broker requeued it). */
int mq_ack(mq_client_t *c, uint64_t delivery_tag, bool multiple) WARN_UNUSED;
int mq_nack(mq_client_t *c, uint64_t delivery_tag, bool requeue) WARN_UNUSED;
/* Service the connection without blocking: heartbeats, buffered frames, late confirms. Call
 * from a timer shorter than the heartbeat. Returns 1 when mq_consume_next() has something to
 * hand out (deliveries read here, or a lost consumer), 0 when idle, MQ_ERR_CONNECTION when
 * disconnected. Never reconnects. */
int mq_pump(mq_client_t *c) WARN_UNUSED;

/* Breaker state and counters for health/metrics. */
const breaker_t *mq_breaker(const mq_client_t *c);
/* Milliseconds until the breaker lets a publish or consume through again (as a probe); 0 when a
 * call may go now (closed, half-open, or open long enough). Monotonic clock. */
int64_t mq_retry_in_ms(const mq_client_t *c);
/* Text of the last failure (connect error, channel.close reply, ...); "" when none. */
const char *mq_last_error(const mq_client_t *c);
/* Find a header value as a string (UTF-8 'S' kind); NULL when absent. Returns malloc'd copy. */
char *mq_header_string(const amqp_table_t *headers, const char *key);

#endif
