/*
 * The wanted broker topology as data (internal to the topology code of src/mq): declare applies a
 * plan, verify compares a plan with what the management API reports. Keeping both on one
 * description means they cannot disagree about an argument.
 */
#ifndef WARREN_TOPOLOGY_PLAN_H
#define WARREN_TOPOLOGY_PLAN_H

#include <stdio.h>
#include <json-c/json.h>
#include "warren/config.h"

/* Heartbeats are only useful fresh; they must not pile up while no executor consumes them. */
#define TOPO_HEARTBEAT_TTL_MS 60000

#define TOPO_NAME_MAX 256
#define TOPO_MAX_ARGS 6

typedef struct topo_arg {
    const char *key; /* "x-message-ttl", ... (static text) */
    bool is_int;
    int64_t i;
    char s[TOPO_NAME_MAX];
} topo_arg_t;

typedef struct topo_exchange {
    char name[TOPO_NAME_MAX];
    const char *type; /* "topic", "fanout" */
} topo_exchange_t;

typedef struct topo_queue {
    char name[TOPO_NAME_MAX];
    bool quorum;
    bool transient; /* exclusive, auto-delete, not durable: the declaring connection's own */
    topo_arg_t args[TOPO_MAX_ARGS];
    size_t n_args;
    /* > 0: an older warren declared this queue with only the first n_legacy_args arguments;
     * such a queue is accepted with a warning (it cannot be redeclared without draining it). */
    size_t n_legacy_args;
} topo_queue_t;

typedef struct topo_binding {
    char exchange[TOPO_NAME_MAX];
    char queue[TOPO_NAME_MAX];
    char key[TOPO_NAME_MAX];
    bool any_key; /* fanout: the key is irrelevant, only the link matters */
} topo_binding_t;

typedef struct topo_plan {
    topo_exchange_t exchanges[2];
    size_t n_exchanges;
    topo_queue_t queues[4];
    size_t n_queues;
    topo_binding_t bindings[4];
    size_t n_bindings;
    char hint[TOPO_NAME_MAX]; /* command that repairs missing pieces */
} topo_plan_t;

/* Exchanges, dead-letter queue (when enabled) and the executor's queues. */
void topo_plan_common(const warren_config_t *cfg, topo_plan_t *p);
/* One worker's queue and binding; -1 when worker_id is not a valid id. */
int topo_plan_worker(const warren_config_t *cfg, const char *worker_id, topo_plan_t *p) WARN_UNUSED;
/* One worker process's control queue (transient, never quorum; rejected messages dead-letter)
 * and its binding, with the executions exchange it binds to; -1 when worker_id is not valid. */
int topo_plan_control(const warren_config_t *cfg, const char *worker_id,
                      topo_plan_t *p) WARN_UNUSED;
/* Wanted argument by key, NULL when the plan does not set it. */
const topo_arg_t *topo_queue_arg(const topo_queue_t *q, const char *key);

/*
 * Compare the plan with the management API's JSON (GET /api/exchanges/V/NAME, /api/queues/V/NAME,
 * /api/bindings/V/e/EX/q/Q). Each prints one line per drift to out, in words an operator can
 * act on (hint: the command that repairs it), and returns the number of drifts.
 */
int topo_compare_exchange(const topo_exchange_t *want, json_object *live, const char *hint,
                          FILE *out);
int topo_compare_queue(const topo_queue_t *want, json_object *live, const char *hint, FILE *out);
/* `live` lists the bindings from exchange to queue; checks the plan's bindings for that pair
 * and reports extra keys (a stray '#' would route other workers' dispatches here). */
int topo_compare_bindings(const topo_plan_t *p, const char *exchange, const char *queue,
                          json_object *live, FILE *out);

/*
 * Turn the broker's 406 reply text ("PRECONDITION_FAILED - inequivalent arg 'x-message-ttl'
 * for queue 'q' in vhost '/': received '300000' but current is '60000'") into an
 * operator-readable sentence in err; other refusals are quoted as they are.
 */
void topo_explain_refusal(const char *what, const char *name, const char *reply, char *err,
                          size_t errlen);

#endif
