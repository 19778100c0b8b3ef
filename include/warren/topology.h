/*
 * Broker topology: the executions exchange, the dead-letter exchange and queue, per-worker
 * TTL queues, and the executor's result/heartbeat queues. Declare and verify (drift report).
 *
 * Dead-letter routing: attune.dlx is a FANOUT exchange, so dead letters keep their original
 * routing key (execution.dispatch.worker.N) and still reach attune.dlx.queue — the reference
 * design's direct exchange bound with '#' matches nothing and drops them.
 */
#ifndef WARREN_TOPOLOGY_H
#define WARREN_TOPOLOGY_H

#include "warren/config.h"
#include "warren/mq.h"

/* "worker.{id}.executions" and "execution.dispatch.worker.{id}" into buf; -1 if the id is not
 * valid (warren/ids.h) or the name too long. */
int topo_worker_queue(const char *worker_id, char *buf, size_t len) WARN_UNUSED;
int topo_dispatch_key(const char *worker_id, char *buf, size_t len) WARN_UNUSED;
/* "worker.{id}.control", a worker process's own queue for control messages, and the key that
 * routes cancel requests to it, "execution.cancel.worker.{id}"; -1 as above. */
int topo_control_queue(const char *worker_id, char *buf, size_t len) WARN_UNUSED;
int topo_cancel_key(const char *worker_id, char *buf, size_t len) WARN_UNUSED;

/* Declare exchanges and the dead-letter queue, and the executor's queues. A 406
 * "inequivalent arg" becomes an operator-readable message in err, not a crash. */
int topo_declare_common(mq_client_t *c, const warren_config_t *cfg, char *err,
                        size_t errlen) WARN_UNUSED;
/* Declare and bind one worker's queue with TTL and DLX (quorum args when configured). */
int topo_declare_worker(mq_client_t *c, const warren_config_t *cfg, const char *worker_id,
                        char *err, size_t errlen) WARN_UNUSED;
/* Declare and bind one worker process's control queue on c's connection: exclusive, auto-delete
 * and not durable, so it lives exactly as long as that connection (another connection holding it
 * gets 405 RESOURCE_LOCKED), with the DLX when dead-lettering is enabled. */
int topo_declare_control(mq_client_t *c, const warren_config_t *cfg, const char *worker_id,
                         char *err, size_t errlen) WARN_UNUSED;

/* Declare the events exchange (durable topic; events.exchange) on c, connecting it first when
 * it is not (within the reconnect backoff). -1 with err. */
int topo_declare_events(mq_client_t *c, const char *exchange, char *err, size_t errlen) WARN_UNUSED;

/* Messages ready in queue (a passive declare: unacked deliveries are not counted), on a
 * connected client; -1 with err when it is not connected or the queue is missing. */
int topo_queue_messages(mq_client_t *c, const char *queue, int64_t *messages, char *err,
                        size_t errlen) WARN_UNUSED;

/* A message taken from a queue with basic.get and not yet acked (topo_take). */
typedef struct topo_taken {
    uint64_t tag; /* for topo_ack_taken */
    char *body;   /* NUL-terminated copy of the body_len bytes */
    size_t body_len;
    char *message_id, *routing_key; /* NULL when absent */
} topo_taken_t;

/* Take one message from queue (basic.get, acked later) on a connected client that consumes
 * nothing: 1 with *out, 0 when the queue is empty or missing (*missing says which), -1 with err.
 * Bodies over max_body are refused (-1): nothing warren publishes to a worker queue is. */
int topo_take(mq_client_t *c, const char *queue, size_t max_body, topo_taken_t *out, bool *missing,
              char *err, size_t errlen) WARN_UNUSED;
void topo_taken_free(topo_taken_t *t);
/* Ack every taken message up to and including tag (basic.ack multiple). */
int topo_ack_taken(mq_client_t *c, uint64_t tag, char *err, size_t errlen) WARN_UNUSED;
/* Delete queue; if_empty: only when nothing is in it (a message that arrived since stays, and
 * the call fails: 406 PRECONDITION_FAILED). A missing queue counts as deleted. */
int topo_delete_queue(mq_client_t *c, const char *queue, bool if_empty, char *err,
                      size_t errlen) WARN_UNUSED;

/* Compare the live broker (via passive declares and the management API when mgmt_url is
 * given) with the configuration; print one line per drift to out. Returns the number of
 * drifts found, or -1 when the broker cannot be inspected. worker_ids may be NULL. */
int topo_verify(mq_client_t *c, const warren_config_t *cfg, const char *mgmt_url,
                const char *const *worker_ids, size_t n_workers, FILE *out) WARN_UNUSED;

#endif
