/*
 * Internal to the mq module: the client struct and the helpers the MessageClient's files share
 * (src/mq/client.c, frames.c, publish.c, consume.c), and raw channel access for topology.c.
 * Nothing outside src/mq includes this.
 */
#ifndef WARREN_MQ_INTERNAL_H
#define WARREN_MQ_INTERNAL_H

#include <sys/time.h>
#include "mq/confirm.h"
#include "warren/backoff.h"
#include "warren/fiber.h"
#include "warren/mq.h"

#define MQ_CHANNEL 1
/* Delivery tags handed to callers carry the channel incarnation in their top bits, so an ack
 * for a delivery from a channel that has since been reopened is refused, not misapplied. */
#define MQ_TAG_BITS 40
#define MQ_TAG_MASK ((UINT64_C(1) << MQ_TAG_BITS) - 1)
#define MQ_GEN_MASK ((UINT64_C(1) << (64 - MQ_TAG_BITS)) - 1)

/* The publish call in progress: lets the frame handler map a basic.return to its tag. */
typedef struct mq_publish_wait {
    const mq_message_t *msgs;
    char (*ids)[64]; /* message_id per message (given or generated) */
    uint64_t *tags;  /* delivery tag per sent message */
    size_t n, sent;
    uint64_t first_cookie;
    int lost_status; /* status for entries lost by a reset during this call */
} mq_publish_wait_t;

struct mq_client {
    mq_options_t opts; /* strings point into the copies below */
    char *url, *app_id, *ca_file, *cert_file, *key_file;
    char user[MQ_USER_MAX + 1];   /* the broker user of the last login: every publish's user_id */
    amqp_connection_state_t conn; /* NULL while disconnected */
    int frame_max; /* negotiated: the bound on every frame we send (the library's is larger) */
    bool channel_open;
    uint64_t channel_gen; /* bumped on every channel open */
    bool blocked;         /* connection.blocked: the broker refuses publishes */
    breaker_t breaker;
    backoff_t backoff;
    int64_t next_connect_ms;      /* no automatic reconnect before this (monotonic) */
    int64_t next_connect_warn_ms; /* a failed connect is a warning again from this time on */
    confirm_tracker_t confirms;
    uint64_t publish_seq;       /* confirm cookies: one per publish, never reused */
    mq_publish_wait_t *waiting; /* set only inside mq_publish_batch */
    fiber_lock_t lock;          /* the fiber publishing on the connection (mq_held) */
    /* consumer */
    char *consumer_tag;              /* NULL when not consuming */
    int consume_status;              /* why we are not consuming (sticky until mq_consume) */
    bool consume_event_unseen;       /* consumer lost; mq_consume_next has not said so yet */
    char consume_error[ERRBUF_SIZE]; /* why the consumer was lost */
    mq_delivery_t **stash;           /* deliveries read while waiting for something else */
    size_t stash_head, stash_len, stash_cap;
    char last_error[ERRBUF_SIZE];
    char connect_error[ERRBUF_SIZE]; /* why the last connect attempt failed */
};

/* Connection (client.c) */
/* Connect unless connected. `probe`: a half-open breaker probe, which skips the backoff wait.
 * Returns MQ_OK or MQ_ERR_CONNECTION (reason in c->last_error). */
int mq_ensure_connected(mq_client_t *c, bool probe) WARN_UNUSED;
/* The connection is unusable: destroy it, mark outstanding publishes LOST, drop the consumer. */
void mq_connection_lost(mq_client_t *c, const char *why);
/* The channel was closed (close-ok already sent): reset confirms, drop the consumer, reopen. */
int mq_channel_closed(mq_client_t *c, const char *why);
/* Wait until the socket can take `bytes` more without blocking, up to deadline_ms. On a stall
 * the connection is dropped. Returns MQ_OK or MQ_ERR_CONNECTION. */
int mq_wait_writable(mq_client_t *c, size_t bytes, int64_t deadline_ms) WARN_UNUSED;
void mq_set_error(mq_client_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The consumer (if any) is gone for `status`, reason in c->last_error; mq_consume_next reports
 * both until mq_consume resubscribes. */
void mq_consumer_lost(mq_client_t *c, int status);

/* Raw channel access for topology declarations (bypasses the breaker; admin path). */
amqp_connection_state_t mq_conn(mq_client_t *c);
int mq_channel(const mq_client_t *c);
/* After a channel.close from the broker: answer close-ok and reopen; the close's text in err. */
int mq_reopen_channel(mq_client_t *c, char *err, size_t errlen) WARN_UNUSED;
/* Describe an rpc reply ("404 NOT_FOUND - no exchange 'x'") into buf. */
void mq_describe_reply(amqp_rpc_reply_t r, char *buf, size_t len);

/* TLS (tls.c) */
/* The TLS settings alone: files present and readable, a certificate with its key, no encrypted
 * key. 0, or -1 with the reason in err. */
int mq_tls_check(const mq_tls_t *t, char *err, size_t errlen) WARN_UNUSED;
/* An SSL socket on conn (which owns it from then on) set up from t, after mq_tls_check().
 * NULL with the reason in err. */
amqp_socket_t *mq_tls_socket(amqp_connection_state_t conn, const mq_tls_t *t, char *err,
                             size_t errlen);
/* Why a TLS connection failed (amqp_socket_open_noblock(), or a library error after it), in
 * the settings' terms. */
void mq_tls_describe(int status, const char *host, int port, const mq_tls_t *t, char *buf,
                     size_t len);

/* Frames (frames.c) */
/* Read and handle one frame, waiting until deadline_ms at most. Returns 1 when a frame was
 * handled, 0 when none came, MQ_ERR_CONNECTION when the connection is gone. */
int mq_read_frame(mq_client_t *c, int64_t deadline_ms);
/* Handle every frame already buffered or readable now; 0, or MQ_ERR_CONNECTION. */
int mq_drain(mq_client_t *c);
void mq_stash_push(mq_client_t *c, mq_delivery_t *d);
mq_delivery_t *mq_stash_pop(mq_client_t *c);
/* The channel is gone: its unacked deliveries are the broker's again (it requeues them), so
 * handing them out would only produce acks that cannot be applied. */
void mq_stash_discard(mq_client_t *c);

#endif
