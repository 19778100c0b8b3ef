/* Every configuration key of warren: type, default, bounds, secrecy and help, in one table. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include "common/config_table.h"
#include "warren/action_timeouts.h"
#include "warren/version.h"

static const char *const queue_types[] = {"classic", "quorum", NULL};
static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"auto", "json", "text", NULL};

#define OFF(field) offsetof(warren_config_t, field), sizeof(((warren_config_t *)0)->field)
/* clang-format off */
#define STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, false, h, NULL}
#define CHECKED_STR(p, f, d, check, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, false, h, check}
#define SECRET_STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, true, false, h, NULL}
#define INT(p, f, d, lo, hi, h) {p, CT_INT, OFF(f), d, lo, hi, NULL, false, false, h, NULL}
#define BOOL(p, f, d, h) {p, CT_BOOL, OFF(f), d, 0, 0, NULL, false, false, h, NULL}
#define ENUM(p, f, d, c, h) {p, CT_ENUM, OFF(f), d, 0, 0, c, false, false, h, NULL}
/* Keys a running daemon takes on SIGHUP: read afresh where they are used, or handed on by the
 * daemon's reload step (executor.c, worker.c). Connections, topology, names, sizes fixed at
 * start and anything the broker or database holds on to need a restart. */
#define R_CHECKED_STR(p, f, d, check, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, true, h, check}
#define R_INT(p, f, d, lo, hi, h) {p, CT_INT, OFF(f), d, lo, hi, NULL, false, true, h, NULL}
#define R_ENUM(p, f, d, c, h) {p, CT_ENUM, OFF(f), d, 0, 0, c, false, true, h, NULL}
/* clang-format on */
#define MQ "message_queue.rabbitmq."
#define DAY_MS 86400000LL

const cfg_key_t cfg_table[] = {
    SECRET_STR("database.url", database.url, "postgresql://warren@127.0.0.1:5432/warren",
               "PostgreSQL connection URL (executor and migrate only; workers never need it)"),
    INT("database.connect_timeout_s", database.connect_timeout_s, "5", 1, 300,
        "Seconds to wait for a database connection"),
    INT("database.statement_timeout_ms", database.statement_timeout_ms, "5000", 100, 600000,
        "The executor's bound on one statement: the server's statement_timeout, and the "
        "client gives a server that does not answer up a little later and reconnects"),

    SECRET_STR(MQ "url", rabbitmq.url, "amqp://guest:guest@127.0.0.1:5672/%2f",
               "AMQP URL of the RabbitMQ node"),
    INT(MQ "heartbeat_s", rabbitmq.heartbeat_s, "30", 0, 3600,
        "AMQP heartbeat interval in seconds (0 disables heartbeats)"),
    INT(MQ "prefetch", rabbitmq.prefetch, "64", 1, 65535,
        "Unacknowledged deliveries per consumer (workers use worker.max_concurrency instead)"),
    INT(MQ "worker_queue_ttl_ms", rabbitmq.worker_queue_ttl_ms, "300000", 1, 7 * DAY_MS,
        "How long a dispatch may wait in a worker queue before it is dead-lettered"),
    ENUM(MQ "queue_type", rabbitmq.queue_type, "classic", queue_types,
         "Queue type of worker and executor queues; quorum makes dead-lettering at-least-once"),
    INT(MQ "connect_timeout_ms", rabbitmq.connect_timeout_ms, "5000", 100, 600000,
        "Bound on TCP connect, AMQP handshake and RPCs"),
    INT(MQ "publish_timeout_ms", rabbitmq.publish_timeout_ms, "5000", 100, 600000,
        "Bound on one publish including its broker confirm"),
    BOOL(MQ "dead_letter.enabled", rabbitmq.dead_letter.enabled, "true",
         "Give worker queues a dead-letter exchange so expired dispatches are failed, not lost"),
    STR(MQ "dead_letter.exchange", rabbitmq.dead_letter.exchange, "attune.dlx",
        "Dead-letter exchange (declared fanout so original routing keys cannot miss)"),
    STR(MQ "dead_letter.queue", rabbitmq.dead_letter.queue, "attune.dlx.queue",
        "Queue bound to the dead-letter exchange, consumed by the executor's dead-letter handler"),
    INT(MQ "dead_letter.ttl_ms", rabbitmq.dead_letter.ttl_ms, "86400000", 1000, 30 * DAY_MS,
        "Retention of unconsumed dead letters in the dead-letter queue; older ones move to the "
        "parking queue"),
    STR(MQ "dead_letter.parking_queue", rabbitmq.dead_letter.parking_queue, "attune.dlx.parking",
        "Queue without a TTL that the dead-letter queue dead-letters into (through the default "
        "exchange) when a dead letter outlives ttl_ms; the executor drains it too"),
    STR(MQ "exchanges.executions", rabbitmq.exchanges.executions, "attune.executions",
        "Topic exchange for dispatches, status changes, completions and heartbeats"),
    STR(MQ "queues.results", rabbitmq.queues.results, "attune.execution.results",
        "Executor queue for workers' status changes and completions"),
    STR(MQ "queues.heartbeats", rabbitmq.queues.heartbeats, "attune.worker.heartbeats",
        "Executor queue for worker announcements and heartbeats"),

    R_INT("circuit_breaker.messaging.failure_threshold",
          circuit_breaker.messaging.failure_threshold, "5", 1, 1000,
          "Consecutive publish/consume failures that open the breaker"),
    R_INT("circuit_breaker.messaging.success_threshold",
          circuit_breaker.messaging.success_threshold, "2", 1, 1000,
          "Successful probes in half-open that close the breaker"),
    R_INT("circuit_breaker.messaging.open_timeout_s", circuit_breaker.messaging.open_timeout_s,
          "30", 1, 3600, "Seconds the breaker stays open before admitting a probe"),

    R_ENUM("log.level", log.level, "info", log_levels, "Lowest level written"),
    R_ENUM("log.format", log.format, "auto", log_formats,
           "auto: JSON when stderr is not a terminal, text otherwise"),

    R_INT("executor.poll_interval_ms", executor.poll_interval_ms, "200", 10, 60000,
          "Scheduler tick while idle"),
    R_INT("executor.batch_size", executor.batch_size, "100", 1, 10000,
          "Executions claimed, or results applied, per database round trip"),
    R_INT("executor.scheduled_timeout_s", executor.scheduled_timeout_s, "600", 1, 30 * 86400,
          "Scheduled but never started for this long: failed by the timeout monitor "
          "(keep above the worker queue TTL so the dead-letter path reports first)"),
    R_INT("executor.unconfirmed_timeout_ms", executor.unconfirmed_timeout_ms, "20000", 1000,
          86400000,
          "Scheduled, but the broker never confirmed the dispatch for this long (the executor "
          "died after COMMIT, the publish got no answer): returned to requested and dispatched "
          "again; keep it several times publish_timeout_ms"),
    R_INT("executor.heartbeat_stale_factor", executor.heartbeat_stale_factor, "3", 2, 100,
          "A worker is live while its last heartbeat is younger than factor x its interval"),
    R_INT("executor.running_timeout_default_s", executor.running_timeout_default_s, "3600", 1,
          30 * 86400,
          "A running execution's timeout when neither its worker's running report nor the "
          "submission names one (older workers), for the backstop below"),
    R_INT("executor.running_grace_s", executor.running_grace_s, "120", 1, 86400,
          "Running longer than its timeout plus this with no result: abandoned by the monitor "
          "(a late completion of the attempt is still accepted)"),
    R_INT("executor.monitor_interval_s", executor.monitor_interval_s, "5", 0, 3600,
          "Period of the timeout monitor; 0 disables it"),
    R_INT("executor.dlq_retry_delay_ms", executor.dlq_retry_delay_ms, "1000", 10, 600000,
          "Delay before a dead letter is retried after a database error"),

    STR("worker.name", worker.name, "",
        "Worker id; empty: WARREN_WORKER_NAME or the host name (a StatefulSet pod name works)"),
    INT("worker.max_concurrency", worker.max_concurrency, "4", 1, 1024,
        "Executions run at once; also the consumer prefetch"),
    R_INT("worker.heartbeat_interval_s", worker.heartbeat_interval_s, "10", 1, 3600,
          "Seconds between heartbeats"),
    STR("worker.handlers_dir", worker.handlers_dir, "",
        "Directory of exec handlers (executables named by action_ref) and C handlers (*.so); "
        "empty: found from the binary's location, PREFIX/libexec/warren/handlers when installed, "
        "the checkout's handlers/ (and the C handlers built) when run from a build tree"),
    R_INT("worker.default_timeout_s", worker.default_timeout_s, "300", 1, 7 * 86400,
          "Handler timeout when neither the submission nor worker.action_timeouts names one"),
    R_CHECKED_STR("worker.action_timeouts", worker.action_timeouts, "", action_timeouts_check,
                  "Per-action default timeouts, \"action=seconds,...\" (e.g. "
                  "\"core.sleep=60,reports.build=3600\"); a submission's --timeout wins"),
    R_INT("worker.kill_grace_s", worker.kill_grace_s, "5", 0, 600,
          "Seconds between SIGTERM and SIGKILL of a timed-out handler's process group"),
    R_INT("worker.shutdown_timeout_s", worker.shutdown_timeout_s, "30", 0, 86400,
          "On SIGTERM, how long in-flight executions may finish before they are killed"),
    R_INT("worker.max_output_bytes", worker.max_output_bytes, "1048576", 1024, 64 * 1024 * 1024,
          "Cap on a handler's captured stdout; the rest is discarded and marked truncated"),
};

const size_t cfg_table_len = sizeof cfg_table / sizeof cfg_table[0];

void cfg_env_name(const char *path, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "WARREN__");
    for (const char *p = path; *p && n + 2 < len; p++) {
        if (*p == '.') {
            buf[n++] = '_';
            buf[n++] = '_';
        } else {
            buf[n++] = (char)toupper((unsigned char)*p);
        }
    }
    buf[n < len ? n : len - 1] = '\0';
}
