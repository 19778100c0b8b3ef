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

/* Counters for the stats log line (one place, see STYLE.md rule 8). */
typedef struct worker_stats {
    uint64_t deliveries; /* dispatches received */
    uint64_t started, completed, failed, timed_out;
    uint64_t rejected;        /* nacked without requeue: dead-lettered */
    uint64_t duplicates;      /* redeliveries of executions already here: not run again */
    uint64_t requeued;        /* nacked with requeue while shutting down */
    uint64_t dropped_held;    /* accepted, not started, channel lost: the broker requeued them */
    uint64_t publish_retries; /* failed status/completion publishes, retried */
    uint64_t reports_lost;    /* statuses/completions never confirmed (given up at exit) */
    uint64_t heartbeats_failed;
    uint64_t resubscribes;
    uint64_t abandoned; /* handlers killed by an immediate exit, never reported */
} worker_stats_t;

/* Handler durations by action for /metrics; actions beyond the table count as "other". */
#define HEALTH_MAX_ACTIONS 64
typedef struct handler_hist {
    char action[ACTION_REF_MAX + 1];
    metrics_hist_t h;
} handler_hist_t;

typedef struct worker {
    worker_opts_t o;
    char id[WORKER_ID_MAX + 1];
    char queue[256];
    char host[256];
    char started_at[40];
    const char *exchange; /* where everything is published */
    struct event_base *base;
    runner_t *runner;
    mq_client_t *consumer;  /* consumes (prefetch = max_concurrency), acks */
    mq_client_t *publisher; /* confirmed publishes: confirm waits never read deliveries */
    worker_phase_t phase;
    int exit_code;
    /* consuming */
    struct event ev_consume;   /* readable on the consumer socket; added while consuming */
    struct event ev_subscribe; /* one-shot: declare and consume (again) */
    backoff_t subscribe_backoff;
    bool consuming;
    /* executions and their reports */
    execs_t execs;
    outbox_t outbox;
    struct event ev_retry; /* one-shot: next outbox try */
    struct event ev_kick;  /* worker_kick_soon: once per loop iteration */
    bool kicking, kick_again;
    /* timers and signals */
    struct event ev_pump, ev_heartbeat, ev_stats, ev_deadline;
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
} worker_t;

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
/* Set up the subscription's events (no I/O). */
void subscriber_init(worker_t *w);
/* (Re)subscribe after delay_ms: declare the topology, consume the worker queue. */
void subscriber_start_later(worker_t *w, int64_t delay_ms);
/* Hand every delivery read so far to intake; notices a lost consumer. */
void subscriber_drain(worker_t *w);
/* Shutdown: basic.cancel, then requeue whatever was delivered before the broker saw it. */
void subscriber_cancel(worker_t *w);
/* Service the consumer connection from the pump timer. */
void subscriber_pump(worker_t *w);

/* intake.c */
/* One delivery from the worker queue; frees it. */
void intake_delivery(worker_t *w, mq_delivery_t *d);
/* Start held executions while there is room. */
/* Start what is held while there is room; returns how many started. */
size_t intake_start_held(worker_t *w);
/* Shutdown: nack (requeue) every execution not started yet. */
void intake_requeue_held(worker_t *w);
/* The consumer channel is gone and the broker requeued every unacked delivery: forget them. */
void intake_forget_deliveries(worker_t *w);

/* reporter.c */
void reporter_running(worker_t *w, exec_t *x);
void reporter_completion(worker_t *w, exec_t *x, const runner_result_t *r, const char *ended_at);
/* Publish what is due in the outbox, in order; a failure arms the retry timer. */
void reporter_flush(worker_t *w);
/* Publish a heartbeat now (best effort: the next one follows anyway). */
void reporter_heartbeat(worker_t *w, const char *status);
/* At exit: log and count every report still in the outbox. */
void reporter_give_up(worker_t *w);

#endif
