/*
 * `warren worker`: consumes dispatches from its queue worker.{id}.executions, runs them with the
 * handler runner and reports running, completed and heartbeat messages, all on one libevent loop.
 * See docs/worker.md. The options here are taken from the configuration by worker_run()
 * (warren/worker.h).
 */
#ifndef WARREN_WORKER_WORKER_H
#define WARREN_WORKER_WORKER_H

#include "warren/config.h"
#include "warren/worker.h"
#include "worker/runner.h"

/* Bytes of a handler's stderr kept for its completion message. */
#define WORKER_STDERR_TAIL_BYTES 8192

typedef struct worker_opts {
    const char *id;             /* valid worker id (ids_worker_valid) */
    const warren_config_t *cfg; /* broker connection, breaker and topology; borrowed */
    int max_concurrency;        /* executions at once; also the consumer prefetch */
    int heartbeat_interval_s;
    int shutdown_timeout_s; /* first SIGTERM: wait this long for running executions */
    runner_opts_t runner;
} worker_opts_t;

#endif
