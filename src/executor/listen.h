/*
 * New work is claimed when it arrives: a PostgreSQL connection of its own LISTENs on channel
 * warren_requested (schema 012 notifies it once per statement that inserts executions, at
 * COMMIT), its socket is a read event of the loop, and each batch of notifications calls the
 * wake function once. The scheduler's poll stays as the fallback: while this connection is
 * down (it is retried from the pump timer with dbconn's backoff), behind a pooler that does not
 * pass notifications, or with executor.listen_notify off.
 */
#ifndef WARREN_EXECUTOR_LISTEN_H
#define WARREN_EXECUTOR_LISTEN_H

#include <event2/event.h>
#include "warren/evloop.h"
#include "executor/dbconn.h"
#include "warren/queries.h"

#define LISTEN_CHANNEL "warren_requested"
/* Executions ended while someone waited for one (schema 036): the API's waiters look. */
#define LISTEN_ENDED_CHANNEL Q_WAIT_CHANNEL

typedef struct listener {
    dbconn_t db;
    struct event_base *base; /* borrowed */
    struct event read_ev;    /* on the connection's socket while listening */
    bool listening;
    bool refused; /* the server refused LISTEN on a live connection: polling only */
    void (*wake)(void *arg);
    void *arg;
    void (*ended)(void *arg); /* NULL: warren_ended is not listened to */
    void *ended_arg;
} listener_t;

/* Set up (no I/O), LISTEN bounded by statement_timeout_ms as every executor statement is; 0,
 * or -1 when out of memory. Free with listener_free(), which may also be
 * given a zeroed listener_t that was never set up. */
int listener_init(listener_t *l, struct event_base *base, const char *url, int connect_timeout_s,
                  int statement_timeout_ms, void (*wake)(void *arg), void *arg) WARN_UNUSED;
/* Also LISTEN warren_ended and call ended(arg) for each batch of its notifications, and at each
 * new LISTEN (what ended meanwhile was never announced). Before the first listener_check. */
void listener_on_ended(listener_t *l, void (*ended)(void *arg), void *arg);
/* From the pump timer: connect and LISTEN when not listening (after a loss: once the backoff
 * allows). A new LISTEN wakes at once: what was inserted meanwhile was never announced. */
void listener_check(listener_t *l);
/* Stop listening (drain): no more wakes. */
void listener_stop(listener_t *l);
void listener_free(listener_t *l);

#endif
