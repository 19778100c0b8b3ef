/*
 * Internal to the worker daemon (worker.c, subscriber.c, intake.c, reporter.c): the worker struct
 * and the calls between its parts. Everything runs on the worker's one event loop thread.
 */
#ifndef WARREN_WORKER_INTERNAL_H
#define WARREN_WORKER_INTERNAL_H

#include <event2/event.h>
#include "warren/backoff.h"
#include "warren/evloop.h"
#include "warren/http.h"
#include "warren/ids.h"
#include "warren/metrics.h"
#include "warren/mq.h"
#include "warren/topology.h"
#include "worker/execs.h"
#include "worker/outbox.h"
#include "worker/runner.h"
#include "worker/worker.h"

/* RUNNING takes dispatches; DRAINING (first SIGTERM) lets running executions finish and reports
 * them; DONE leaves the loop. */
typedef enum { PHASE_RUNNING = 0, PHASE_DRAINING, PHASE_DONE } worker_phase_t;

typedef struct worker worker_t;

/* What differs between the worker's consumers (subscriber.c). */
typedef struct subscription_kind {
    const char *consuming_msg; /* logged at each subscription */
    bool while_draining;       /* keeps consuming, and subscribing again, during a drain */
    bool readiness; /* its subscriptions and losses are the worker's readiness (notify.h) */
    /* Declare what the queue needs on c: 0, or -1 with the reason in err, and *fatal set when
     * retrying cannot help (the broker refused: an operator has to act). */
    int (*declare)(worker_t *w, mq_client_t *c, char *err, size_t errlen, bool *fatal);
    void (*deliver)(worker_t *w, mq_delivery_t *d); /* one delivery; frees it */
    void (*subscribed)(worker_t *w);                /* after each subscription; may be NULL */
    /* The consumer is gone (status from mq_consume_next), before any new subscription; may be
     * NULL. */
    void (*lost)(worker_t *w, int status);
} subscription_kind_t;

/* One consumer on its own connection: declare, consume and watch its socket, again after any
 * loss (with backoff). */
typedef struct subscription {
    worker_t *w;
    const subscription_kind_t *kind;
    mq_client_t *client;       /* the worker's, borrowed */
    const char *queue;         /* borrowed */
    uint64_t *resubscribes;    /* the worker's counter for this consumer */
    struct event ev_consume;   /* readable on the client's socket; added while consuming */
    struct event ev_subscribe; /* one-shot: declare and consume (again) */
    backoff_t backoff;
    bool consuming;
} subscription_t;

/* Counters for the stats log line, all in one place. */
typedef struct worker_stats {
    uint64_t deliveries; /* dispatches received */
    uint64_t started, completed, failed, timed_out, cancelled;
    uint64_t rejected;        /* nacked without requeue: dead-lettered */
    uint64_t past_deadline;   /* dead-lettered unstarted: their start deadline had passed */
    uint64_t duplicates;      /* redeliveries of executions already here: not run again */
    uint64_t repeats;         /* of those, finished ones answered with their completion again */
    uint64_t reruns;          /* finished ones whose completion was no longer kept: run again */
    uint64_t requeued;        /* nacked with requeue while shutting down */
    uint64_t dropped_held;    /* accepted, not started, channel lost: the broker requeued them */
    uint64_t publish_retries; /* failed status/completion publishes, retried */
    uint64_t reports_lost;    /* statuses/completions never confirmed (given up at exit) */
    uint64_t heartbeats_failed;
    uint64_t resubscribes;
    uint64_t abandoned;        /* handlers killed by an immediate exit, never reported */
    uint64_t cancels;          /* cancel requests received */
    uint64_t cancels_ignored;  /* of those: for executions not here, finished or ending */
    uint64_t control_rejected; /* control messages that were no cancel for this worker */
    uint64_t control_resubscribes;
    uint64_t
        bad_signatures; /* dispatches and control messages refused: signature (also rejected) */
} worker_stats_t;

/* Handler durations by action for /metrics; actions beyond the table count as "other". */
#define HEALTH_MAX_ACTIONS 64
typedef struct handler_hist {
    char action[ACTION_REF_MAX + 1];
    metrics_hist_t h;
} handler_hist_t;

struct worker {
    worker_opts_t o;
    warren_config_t *cfg; /* what o came from (o.cfg), borrowed: SIGHUP reloads it */
    char id[WORKER_ID_MAX + 1];
    char queue[256];
    char host[256];
    char started_at[40];
    char incarnation[INCARNATION_LEN + 1]; /* this process's, in every report */
    const char *exchange;                  /* where everything is published */
    struct event_base *base;
    runner_t *runner;
    mq_client_t *consumer;  /* consumes (prefetch = max_concurrency), acks */
    mq_client_t *publisher; /* confirmed publishes: confirm waits never read deliveries */
    worker_phase_t phase;
    int exit_code;
    subscription_t dispatch; /* the consumer client on queue: dispatches */
    /* Cancel requests, on a connection of their own: the control queue is exclusive and lives
     * exactly as long as that connection, whatever happens to the dispatch consumer's. */
    mq_client_t *control_client;
    char control_queue[256];
    subscription_t control;
    /* executions and their reports */
    execs_t execs;
    outbox_t outbox;
    struct event ev_retry; /* one-shot: next outbox try */
    struct event ev_kick;  /* worker_kick_soon: once per loop iteration */
    bool kicking, kick_again;
    /* Publishing runs on fibers (warren/fiber.h), so a confirm wait never holds the loop: one
     * flush of the outbox and one heartbeat at a time, each asked to go again when called
     * meanwhile. */
    bool flushing, flush_again;
    bool heartbeating;
    const char *heartbeat_next; /* the status of the heartbeat asked for meanwhile, NULL: none */
    struct event ev_finish;     /* worker_finish waits for the fibers in hand */
    int64_t finish_deadline_ms;
    /* timers and signals */
    struct event ev_pump, ev_heartbeat, ev_stats, ev_deadline, ev_watchdog;
    evloop_signals_t signals;
    bool terminated;         /* the drain deadline passed: handlers were told to stop */
    bool heartbeats_failing; /* the last heartbeat was not published */
    worker_stats_t stats;
    /* /livez, /readyz, /metrics on worker.http_listen (health.c) */
    http_server_t *http;
    metrics_registry_t metrics;
    handler_hist_t durations[HEALTH_MAX_ACTIONS + 1]; /* the last one is "other" */
    size_t n_durations;
    int64_t loop_beat_ms;
};

/* worker.c */
/* Start held executions and publish what is due, then see whether a drain is complete. Safe to
 * call from any callback: a nested call only asks the running one to loop once more. */
void worker_kick(worker_t *w);
/* worker_kick after the callbacks already due in this loop iteration: handlers that end
 * together are reported in one confirmed batch instead of one confirm wait each. */
void worker_kick_soon(worker_t *w);
/* Leave the loop with exit_code. */
void worker_finish(worker_t *w, int exit_code);

/* health.c */
/* Serve /livez, /readyz and /metrics on worker.http_listen (nothing when it is ""). -1 with
 * err when the address cannot be used. */
int health_start(worker_t *w, char *err, size_t errlen) WARN_UNUSED;
void health_stop(worker_t *w);
/* A handler ended: its duration into the action's histogram. */
void health_observe(worker_t *w, const char *action_ref, int64_t duration_ms);

/* subscriber.c */
#define SUBSCRIBE_BASE_MS 250
#define SUBSCRIBE_MAX_MS 10000
/* The dispatch queue: declares the common topology and the worker queue (a refusal is fatal),
 * hands deliveries to intake, announces the worker after each subscription. */
extern const subscription_kind_t subscriber_dispatches;
/* Set up s and its events (no I/O). */
void subscriber_init(subscription_t *s, worker_t *w, const subscription_kind_t *kind,
                     mq_client_t *client, const char *queue, uint64_t *resubscribes);
/* (Re)subscribe after delay_ms: declare, consume. */
void subscriber_start_later(subscription_t *s, int64_t delay_ms);
/* Hand every delivery read so far to the kind; notices a lost consumer. */
void subscriber_drain(subscription_t *s);
/* basic.cancel, then hand over whatever was delivered before the broker saw it. */
void subscriber_cancel(subscription_t *s);
/* Service the consumer connection from the pump timer. */
void subscriber_pump(subscription_t *s);
/* d's body as an envelope of message type `type` (the caller frees e either way); -1 with the
 * reason in why. */
int subscriber_decode(const mq_delivery_t *d, msg_type_t type, envelope_t *e, char *why,
                      size_t len) WARN_UNUSED;
/* A `what` ("dispatch", "cancel") addressed to worker `to` reached w: -1 with the reason in why
 * when that is another worker. */
int subscriber_addressed(const worker_t *w, const char *what, const char *to, char *why,
                         size_t len) WARN_UNUSED;

/* control.c */
/* The control queue: declares it (never fatal), handles cancel requests; consumes while draining. */
extern const subscription_kind_t control_kind;

/* intake.c */
/* One delivery from the worker queue; frees it. */
void intake_delivery(worker_t *w, mq_delivery_t *d);
/* Start what is held while there is room; returns how many started. */
size_t intake_start_held(worker_t *w);
/* Shutdown: nack (requeue) every execution not started yet. */
void intake_requeue_held(worker_t *w);
/* A held execution was cancelled: report it cancelled without starting it (its dispatch is
 * acked once that completion is confirmed). */
void intake_cancel_held(worker_t *w, execs_record_t *x);
/* The consumer channel is gone and the broker requeued every unacked delivery: forget them. */
void intake_forget_deliveries(worker_t *w);

/* reporter.c */
void reporter_running(worker_t *w, execs_record_t *x);
void reporter_completion(worker_t *w, execs_record_t *x, const runner_result_t *r,
                         const char *ended_at);
/* Queue x's kept completion again, marked as a repeat, under a new message id; its
 * confirmation acks x's deliveries. -1 (nothing queued) on OOM or a full outbox. */
int reporter_repeat(worker_t *w, execs_record_t *x) WARN_UNUSED;
/* Publish what is due in the outbox, in order; a failure arms the retry timer. */
void reporter_flush(worker_t *w);
/* Publish a heartbeat now (best effort: the next one follows anyway). */
void reporter_heartbeat(worker_t *w, const char *status);
/* At exit: log and count every report still in the outbox. */
void reporter_give_up(worker_t *w);

#endif
