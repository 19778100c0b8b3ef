/*
 * One queue the executor consumes, on its own MessageClient, driven by the event loop: the
 * socket as a read event, deliveries drained into a batch, the batch parsed and committed in
 * one transaction through the queue's handler on a fiber of the consumer's (its database lane
 * is shared: the consumers' units of work take turns), then acked in one go. A database outage keeps
 * the batch unacked and retries it after a delay; a batch the database refuses is retried one
 * message at a time, and a single message it still refuses goes to the handler's on_refused
 * (the results queue fails the execution it names), and in the end is stored raw by the
 * fallback.
 * Nothing is acked before it is committed, and nothing is acked without being stored.
 */
#ifndef WARREN_EXECUTOR_CONSUMER_H
#define WARREN_EXECUTOR_CONSUMER_H

#include <event2/event.h>
#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/backoff.h"
#include "warren/evloop.h"
#include "warren/mq.h"

/* One batch on its way through a handler: one item per delivery, in delivery order. */
typedef struct consumer_batch {
    void *items; /* n items of the handler's item_size bytes */
    size_t n;
    const char *queue;       /* the queue the deliveries came from */
    const char *refused;     /* for a fallback: why the database refused the message before */
    executor_stats_t counts; /* what the transaction did; zero when work starts, merged
                                   * into the executor's counters only after COMMIT */
} consumer_batch_t;

/*
 * What a queue's messages mean. The steps every batch takes are the consumer's: allocate
 * zeroed items, parse each delivery into one, run work in one transaction, and after COMMIT
 * merge the counts and log each item; free the items whatever the outcome.
 */
typedef struct consumer_handler {
    const char *what; /* the transaction, for logs: "applying results" */
    size_t item_size;
    /* Fill item from d, outside the transaction. A message that cannot be used is marked in
     * its item (work stores it as a dead letter), never refused. */
    void (*parse)(void *item, const mq_delivery_t *d, const char *queue);
    /* The batch's statements: 0 to commit, -1 with err to roll back. */
    int (*work)(PGconn *db, consumer_batch_t *b, char *err, size_t errlen);
    /* After COMMIT, one item's log lines; NULL: nothing to log. */
    void (*log_item)(const void *item, const char *queue);
    /* Release what parse and work attached to item (not item itself); NULL: nothing. */
    void (*free_item)(void *item);
    /* For one message whose transaction the database refused: the handler to try next; NULL:
     * the consumer's last resort (consumer_opts_t.fallback). */
    const struct consumer_handler *on_refused;
} consumer_handler_t;

typedef struct consumer {
    const char *name; /* "results", "heartbeats", "dead-letters": for logs */
    char *queue;
    mq_client_t *mq;         /* owned */
    struct event_base *base; /* borrowed */
    struct event read_ev;    /* on the client's socket while watching */
    int fd;                  /* the socket read_ev watches; -1 while not watching */
    struct event retry_ev;   /* timer: retry a batch after a database error */
    mq_delivery_t **batch;   /* read, not yet committed and acked */
    size_t n, cap;
    bool subscribed;
    bool retry_pending;
    bool busy;      /* its fiber handles a batch: the socket is not watched meanwhile */
    bool again;     /* more was announced while busy: go round again */
    bool finishing; /* draining: the last round, then never watched again */
    bool isolate;   /* the database refused a batch: one message at a time */
    backoff_t retry_backoff;
    const consumer_handler_t *handler, *fallback;
    dbconn_t *db;            /* borrowed */
    executor_stats_t *stats; /* borrowed */
    int64_t next_subscribe_log_ms;
    int (*declare)(mq_client_t *mq, const void *arg, char *err, size_t errlen);
    const void *declare_arg;
    void (*committed)(void *arg, const executor_stats_t *counts);
    void *committed_arg;
    uint64_t gaps; /* times it stopped hearing: subscription lost, batch kept for a retry */
    bool fault_oom_pending; /* WARREN_FAULT=hold_oom_once: the first delivery is not held */
    size_t prefetch;        /* the client's window (0: none) */
    size_t last_batch;      /* deliveries the last round handled: a backlog when near prefetch */
    size_t held_bytes;      /* bodies of batch[0..n) */
} consumer_t;

typedef struct consumer_opts {
    const char *name, *queue;
    const mq_options_t *mq;
    struct event_base *base;
    int retry_delay_ms; /* first retry delay after a database error; doubles to 30 s */
    const consumer_handler_t *handler;
    /* Stores one delivery raw (dead_letters, reason store_error) when handler keeps failing
     * on it alone. */
    const consumer_handler_t *fallback;
    dbconn_t *db;
    executor_stats_t *stats;
    /* Declares what the consumer needs (its queue, with its exchange and bindings) before every
     * resubscribe, as a worker does: a deleted queue comes back instead of a 404 forever. NULL:
     * nothing. 0, or -1 with err. */
    int (*declare)(mq_client_t *mq, const void *arg, char *err, size_t errlen);
    const void *declare_arg;
    /* After each COMMIT of a batch, with what it did (before its log lines); NULL: nothing.
     * The results queue's tells the scheduler that slots may have freed. */
    void (*committed)(void *arg, const executor_stats_t *counts);
    void *committed_arg;
} consumer_opts_t;

/* The consumers an executor runs (results, heartbeats; dead letters and parked dead letters
 * when dead-lettering is enabled), fixed at start, as the parts that report on them all (the
 * gauges, /readyz, /metrics) borrow them. */
#define CONSUMER_SET_MAX 4
typedef struct consumer_set {
    consumer_t *c[CONSUMER_SET_MAX]; /* borrowed */
    size_t n;
} consumer_set_t;

/* Set up (no I/O). Free with consumer_free(), which leaves unacked deliveries to the broker
 * and may also be given a zeroed consumer_t that was never set up. */
int consumer_init(consumer_t *c, const consumer_opts_t *o) WARN_UNUSED;
void consumer_free(consumer_t *c);
/* A reload: the retry delay (executor.dlq_retry_delay_ms) and the breaker's limits from cfg;
 * a retry already waiting keeps its time. Nothing for a consumer never set up. */
void consumer_reconfigure(consumer_t *c, const warren_config_t *cfg);
/* Subscribe (connecting if needed) and watch the socket; -1 with err when it cannot. */
int consumer_start(consumer_t *c, char *err, size_t errlen) WARN_UNUSED;
/* From the pump timer: heartbeats, deliveries the library buffered, resubscribing when lost. */
void consumer_pump(consumer_t *c);
/* Its fiber handles a batch now. */
bool consumer_busy(const consumer_t *c);
/* A batch kept after a database error is retried now rather than after its backoff (the
 * database came back). */
void consumer_retry_now(consumer_t *c);
/* Shutdown: handle what is already read or buffered (on its fiber: the loop runs until every
 * fiber has ended), and stop watching. consumer_free logs what is left unacked. */
void consumer_finish(consumer_t *c);
/* Subscribed and not waiting to retry a batch: what arrives now is handled now. */
bool consumer_hearing(const consumer_t *c);
/* Deliveries read but not yet acked (kept for a retry, or in the batch being handled). */
size_t consumer_unacked(const consumer_t *c);

#endif
