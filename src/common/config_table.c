/* Every configuration key of warren: type, default, bounds, secrecy and help, in one table. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include "common/config_table.h"
#include "warren/action_timeouts.h"
#include "warren/retry.h"
#include "warren/version.h"

static const char *const queue_types[] = {"classic", "quorum", NULL};
static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"auto", "json", "text", NULL};
static const char *const worker_identities[] = {"shared", "per_worker", NULL};
static const char *const backoffs[] = {"exponential", "polynomial", NULL};

#define OFF(field) offsetof(warren_config_t, field), sizeof(((warren_config_t *)0)->field)
/* clang-format off */
#define STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, false, h, NULL, false}
#define CHECKED_STR(p, f, d, check, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, false, h, check, false}
#define SECRET_STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, true, false, h, NULL, false}
#define OPAQUE_SECRET_STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, true, false, h, NULL, true}
#define INT(p, f, d, lo, hi, h) {p, CT_INT, OFF(f), d, lo, hi, NULL, false, false, h, NULL, false}
#define BOOL(p, f, d, h) {p, CT_BOOL, OFF(f), d, 0, 0, NULL, false, false, h, NULL, false}
#define ENUM(p, f, d, c, h) {p, CT_ENUM, OFF(f), d, 0, 0, c, false, false, h, NULL, false}
/* Keys a running daemon takes on SIGHUP: read afresh where they are used, or handed on by the
 * daemon's reload step (executor.c, worker.c). Connections, topology, names, sizes fixed at
 * start and anything the broker or database holds on to need a restart. */
#define R_CHECKED_STR(p, f, d, check, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, true, h, check, false}
#define R_INT(p, f, d, lo, hi, h) {p, CT_INT, OFF(f), d, lo, hi, NULL, false, true, h, NULL, false}
#define R_ENUM(p, f, d, c, h) {p, CT_ENUM, OFF(f), d, 0, 0, c, false, true, h, NULL, false}
#define R_STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, false, true, h, NULL, false}
#define R_OPAQUE_SECRET_STR(p, f, d, h) {p, CT_STRING, OFF(f), d, 0, 0, NULL, true, true, h, NULL, true}
#define R_BOOL(p, f, d, h) {p, CT_BOOL, OFF(f), d, 0, 0, NULL, false, true, h, NULL, false}
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
    BOOL("database.prepared_statements", database.prepared_statements, "true",
         "The executor prepares each statement once per connection and reuses it (no parse "
         "and plan per call); false behind a transaction pooler without prepared-statement "
         "support (PgBouncer before 1.21)"),

    SECRET_STR(MQ "url", rabbitmq.url, "amqp://guest:guest@127.0.0.1:5672/%2f",
               "AMQP URL of the RabbitMQ node"),
    INT(MQ "heartbeat_s", rabbitmq.heartbeat_s, "30", 0, 3600,
        "AMQP heartbeat interval in seconds (0 disables heartbeats)"),
    INT(MQ "prefetch", rabbitmq.prefetch, "256", 1, 65535,
        "Unacknowledged deliveries per executor consumer (workers use worker.max_concurrency "
        "instead); the executor holds at most 64 MiB of their bodies per consumer, the rest "
        "waits in the socket"),
    INT(MQ "worker_queue_ttl_ms", rabbitmq.worker_queue_ttl_ms, "300000", 1, 7 * DAY_MS,
        "How long a dispatch may wait in a worker queue before it is dead-lettered"),
    ENUM(MQ "queue_type", rabbitmq.queue_type, "classic", queue_types,
         "Queue type of worker and executor queues; quorum makes dead-lettering at-least-once"),
    INT(MQ "connect_timeout_ms", rabbitmq.connect_timeout_ms, "5000", 100, 600000,
        "Bound on TCP connect, AMQP handshake and RPCs"),
    INT(MQ "publish_timeout_ms", rabbitmq.publish_timeout_ms, "5000", 100, 600000,
        "Bound on one publish including its broker confirm"),
    STR(MQ "tls.ca_file", rabbitmq.tls.ca_file, "/etc/ssl/certs/ca-certificates.crt",
        "CA certificates (PEM) the broker's certificate must verify against; the default is "
        "Debian's bundle of public CAs (package ca-certificates). Like every tls key it applies "
        "to amqps:// URLs only (docs/tls.md)"),
    STR(MQ "tls.cert_file", rabbitmq.tls.cert_file, "",
        "Client certificate (PEM, optionally followed by its chain) shown to a broker that asks "
        "for one; empty: none. Needs tls.key_file"),
    STR(MQ "tls.key_file", rabbitmq.tls.key_file, "",
        "Private key of tls.cert_file (PEM, not encrypted: rabbitmq-c cannot ask for a "
        "passphrase)"),
    BOOL(MQ "tls.verify_peer", rabbitmq.tls.verify_peer, "true",
         "Refuse a broker whose certificate does not verify against tls.ca_file; false encrypts "
         "without knowing who answers (testing only)"),
    BOOL(MQ "tls.verify_hostname", rabbitmq.tls.verify_hostname, "true",
         "Refuse a broker whose certificate does not name the URL's host (a DNS name of its "
         "subjectAltName, or its CN when it has none; rabbitmq-c 0.11 never matches IP "
         "addresses, so name the host)"),
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
    INT("message_queue.max_body_bytes", message_queue.max_body_bytes, "1048576", 65536,
        64 * 1024 * 1024,
        "Largest message body a consumer holds (per delivery; up to prefetch of them per "
        "consumer). A bigger one is read off the connection and dropped as it arrives, keeping "
        "its first 4096 bytes: the executor records it as a dead letter (reason oversized), a "
        "worker rejects it to the dead-letter exchange. The default is the envelope limit, the "
        "largest body warren ever publishes (results are cut to it); below it, big parameters or "
        "results turn into dead letters. Keep the broker's max_message_size above it"),
    STR("message_queue.signing_key_file", message_queue.signing_key_file, "",
        "File of message signing keys, one per line \"KEY_ID SECRET\" (a secret of at least 32 "
        "bytes; # comments); refused when group- or world-readable. The first key signs every "
        "message the daemon publishes (HMAC-SHA256 over type, id and body; headers "
        "warren-key-id, warren-signature), every key verifies, so a rotation adds the new key "
        "everywhere first. Set, a worker refuses dispatches and cancels, and the executor "
        "reports, heartbeats and dead letters, that do not verify. \"\": nothing is signed or "
        "checked (docs/security.md)"),

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
          "Scheduler tick while idle: the fallback that finds work nothing announced (with "
          "listen_notify, work is claimed when it is inserted and when a result frees a slot)"),
    BOOL("executor.listen_notify", executor.listen_notify, "true",
         "LISTEN on a second database connection for new executions (schema 012) and claim "
         "them at once; off behind a pooler that does not pass notifications (pgbouncer in "
         "transaction mode): the poll alone finds the work"),
    R_INT("executor.batch_size", executor.batch_size, "100", 1, 10000,
          "Executions claimed, or results applied, per database round trip"),
    R_INT("executor.max_redispatches", executor.max_redispatches, "3", 0, 1000,
          "A dispatch no worker started (its worker lost or retired, or it expired unconsumed) "
          "is dispatched again at once, not counted as a retry, at most this many times per "
          "execution (docs/retries.md); 0: the retry policy decides, as worker_lost"),
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
    ENUM("executor.worker_identity", executor.worker_identity, "shared", worker_identities,
         "Whom the executor believes: shared (one broker user for every component, for "
         "development) or per_worker (each worker logs in as a broker user named like the "
         "worker; a report is applied only when its broker-validated user_id is the worker it "
         "speaks for, and a dead letter only when the executor's own user published it; "
         "docs/security.md)"),
    R_INT("executor.dlq_retry_delay_ms", executor.dlq_retry_delay_ms, "1000", 10, 600000,
          "Delay before a dead letter is retried after a database error"),

    INT("staleness.interval_s", staleness.interval_s, "30", 0, 3600,
        "Period of the staleness detector (docs/dead-letters.md); 0 disables it"),
    R_INT("staleness.requested_s", staleness.requested_s, "86400", 0, 30 * 86400,
          "Requested longer than this: the execution fails as stale (a staleness_timeout "
          "record); 0: never"),
    R_INT("staleness.scheduled_s", staleness.scheduled_s, "3600", 0, 30 * 86400,
          "Scheduled longer than this: it fails as stale; 0: never"),
    R_INT("staleness.running_s", staleness.running_s, "86400", 0, 30 * 86400,
          "Running longer than this: it is abandoned as stale; 0: never"),
    R_INT("staleness.warning_pct", staleness.warning_pct, "80", 1, 99,
          "From this percentage of its threshold on an execution is in warning: a log line "
          "naming it and warren_staleness_warnings_total"),
    R_CHECKED_STR("staleness.requested_by_action", staleness.requested_by_action, "",
                  action_timeouts_check, "Per-action requested thresholds, action=seconds,..."),
    R_CHECKED_STR("staleness.scheduled_by_action", staleness.scheduled_by_action, "",
                  action_timeouts_check, "Per-action scheduled thresholds, action=seconds,..."),
    R_CHECKED_STR("staleness.running_by_action", staleness.running_by_action, "",
                  action_timeouts_check, "Per-action running thresholds, action=seconds,..."),

    BOOL("events.enabled", events.enabled, "true",
         "Publish an ExecutionDeadLettered event for every dead-letter record and an "
         "ExecutionEnded event for every terminal transition, after it is committed "
         "(docs/dead-letters.md, docs/api.md)"),
    STR("events.exchange", events.exchange, "attune.events",
        "Events exchange (durable topic, declared by the executor)"),
    STR("events.dead_lettered_routing_key", events.dead_lettered_key, "execution.dead_lettered",
        "Routing key of ExecutionDeadLettered events"),
    STR("events.ended_routing_key_prefix", events.ended_prefix, "execution.ended",
        "Routing key of ExecutionEnded events: this, then .<status>.<action_ref> (docs/api.md, "
        "\"Completion events\")"),
    INT("events.interval_ms", events.interval_ms, "1000", 50, 600000,
        "Period of the emitter, which also republishes every record not yet emitted "
        "(the reconciler)"),
    R_INT("events.retry_initial_ms", events.retry_initial_ms, "1000", 10, 600000,
          "Delay after a failed event publish, doubling up to events.retry_max_ms"),
    R_INT("events.retry_max_ms", events.retry_max_ms, "60000", 10, 3600000,
          "Longest delay between event publish retries"),

    R_INT("redrive.default_rate", redrive.default_rate, "50", 1, 500,
          "Records per second of a bulk redrive task that names no rate"),
    R_INT("redrive.max_rate", redrive.max_rate, "500", 1, 500,
          "The highest rate a bulk redrive task may ask for (a faster one is refused)"),
    R_INT("dead_letter.max_redrives", dead_letter.max_redrives, "3", 0, 1000,
          "An execution redriven this many times already is not redriven again: the redrive "
          "route answers 409, a bulk task skips its record as max_redrives; 0: no limit"),

    INT("retention.interval_s", retention.interval_s, "3600", 0, 86400,
        "Period of the retention rounds (docs/dead-letters.md); 0 disables them"),
    R_INT("retention.batch_size", retention.batch_size, "1000", 1, 100000,
          "Rows one retention statement deletes at most"),
    R_INT("dead_letters.retention_days", dead_letters.retention_days, "0", 0, 36500,
          "Closed dead-letter records resolved more than this many days ago are pruned "
          "(pending and investigating ones never); 0: never"),
    R_INT("executions.retention_days", executions.retention_days, "0", 0, 36500,
          "Terminal executions that ended more than this many days ago are pruned with their "
          "history (not while an open record names them); 0: never"),
    R_INT("execution_history.retention_days", execution_history.retention_days, "0", 0, 36500,
          "History rows of terminal executions older than this many days are pruned; 0: never"),
    R_INT("retry.max_attempts", retry.max_attempts, "1", 1, RETRY_MAX_ATTEMPTS,
          "Default retry policy (docs/retries.md): attempts an execution gets, the first "
          "included; 1 never retries. A submission's --max-attempts wins"),
    R_ENUM("retry.backoff", retry.backoff, "exponential", backoffs,
           "Delay before retry n: exponential min(base_ms * factor^(n-1), max_ms), or polynomial "
           "min(n^4 s, max_ms)"),
    R_INT("retry.base_ms", retry.base_ms, "1000", 1, RETRY_MAX_DELAY_MS,
          "Exponential backoff: the first retry's delay before jitter"),
    R_INT("retry.factor", retry.factor, "2", 1, 100, "Exponential backoff: growth per retry"),
    R_INT("retry.max_ms", retry.max_ms, "3600000", 1, RETRY_MAX_DELAY_MS,
          "No delay before jitter exceeds this"),
    R_CHECKED_STR("retry.jitter", retry.jitter, "full", retry_jitter_check,
                  "full: the delay drawn uniformly from [0, d]; N%: from d +- N% (1..100); none"),
    R_CHECKED_STR("retry.retry_on", retry.retry_on, "tempfail,worker_lost", retry_on_check,
                  "Outcomes retried, comma-separated: tempfail (exit code 75), failed (any "
                  "failure), timeout, worker_lost (dispatch expired unconsumed, worker stale, "
                  "offline, restarted or retired). A cancelled execution is never retried"),
    R_CHECKED_STR("retry.never_retry", retry.never_retry, "", retry_never_check,
                  "Error types never retried, comma-separated: an error \"Type: text\" has the "
                  "type Type"),
    {"actions", CT_ACTIONS, OFF(actions), "", 0, 0, NULL, false, true,
     "Per-action settings: a list of { action = \"NAME\"; queue_timeout_s = 30; retry = { "
     "max_attempts = 3; retry_on = \"tempfail,timeout\"; ... }; }, each field of retry.* "
     "overridable (the others come from retry.*); queue_timeout_s (seconds, 0: none) is the "
     "longest an execution of the action may wait from its due time before a worker starts it "
     "(a submission's own queue_timeout_s wins); as text (environment): \"NAME: field=value "
     "...; NAME: ...\". `warren config check` prints every action's effective policy",
     retry_actions_check, false},

    STR("api.listen", api.listen, "127.0.0.1:8080",
        "host:port of the executor's HTTP API, /livez, /readyz and /metrics; \"\" turns it off"),
    R_OPAQUE_SECRET_STR(
        "api.keys", api.keys, "",
        "API keys \"NAME:SCOPE:SECRET,...\" (SCOPE read, submit, operate or admin; write: "
        "deprecated, means operate; SECRET at least 16 "
        "characters, no comma), added to those of api.keys_file"),
    R_STR(
        "api.keys_file", api.keys_file, "",
        "File of API keys, one per line \"NAME SCOPE SECRET\" (# comments); refused when group- or "
        "world-readable"),
    R_STR("api.tls_cert_file", api.tls_cert_file, "",
          "PEM certificate (with its chain) for HTTPS on api.listen, with api.tls_key_file; \"\" "
          "serves plain HTTP (and logs a warning when api.listen is not loopback). The files are "
          "read again on SIGHUP, so a renewed certificate takes effect without a restart"),
    R_STR("api.tls_key_file", api.tls_key_file, "",
          "PEM private key of api.tls_cert_file (not encrypted; keep it readable by warren only)"),
    R_STR("api.tls_client_ca_file", api.tls_client_ca_file, "",
          "PEM CA certificates: with it, every API client must present a certificate one of them "
          "signed (mutual TLS); \"\" asks for none"),
    R_BOOL(
        "api.auth_reads", api.auth_reads, "false",
        "GET requests of /api/ need a key too (any scope), but /api/v1/openapi.json; writes always "
        "need a key of their route's scope (docs/api.md)"),
    INT("api.max_body_bytes", api.max_body_bytes, "8388608", 1024, 256 * 1024 * 1024,
        "Largest request body; a larger one gets 413"),
    INT("api.max_connections", api.max_connections, "64", 1, 10000,
        "Open API connections at most; further clients wait in the listen backlog"),
    INT("api.max_header_bytes", api.max_header_bytes, "16384", 1024, 1048576,
        "Largest request line and headers"),
    INT("api.body_budget_bytes", api.body_budget_bytes, "16777216", 1024, 1024 * 1024 * 1024,
        "Bytes the bodies of all API requests being received or answered may take together; a "
        "request whose Content-Length does not fit gets 503 with Retry-After before its body is "
        "read; never less than api.max_body_bytes"),
    INT("api.read_timeout_s", api.read_timeout_s, "10", 1, 3600,
        "A read or write of an API connection that makes no progress for this many seconds "
        "closes it"),
    INT("api.header_timeout_s", api.header_timeout_s, "5", 1, 3600,
        "A request line and headers must arrive whole within this many seconds of the first "
        "byte (of the connection for its first request), or the connection is closed"),
    INT("api.body_timeout_s", api.body_timeout_s, "30", 1, 3600,
        "A request body must arrive whole within this many seconds of its head, or the "
        "connection is closed"),
    INT("api.idle_timeout_s", api.idle_timeout_s, "30", 1, 3600,
        "A kept-alive connection without a request is closed after this many seconds"),
    R_INT("api.statement_timeout_ms", api.statement_timeout_ms, "5000", 100, 600000,
          "The bound on one statement of an API request, on the API's own database "
          "connections (dispatch and results never wait for them); a request also waits at "
          "most this long for a free connection, then gets 503 with Retry-After"),
    INT("api.pool_size", api.pool_size, "2", 1, 64,
        "Database connections for API reads (GET); writes (POST, PATCH) have one more of "
        "their own, so a slow read never holds up a submit"),
    INT("api.queue_size", api.queue_size, "64", 0, 100000,
        "API requests that may wait for a database connection of the API; more get 503 with "
        "Retry-After at once"),
    R_INT("api.idempotency_window_s", api.idempotency_window_s, "86400", 1, 31536000,
          "Seconds an idempotency key of a submission (docs/api.md) names its execution: the "
          "same key within them answers with that execution, or 409 for another request; "
          "after them the key is free again"),

    STR("worker.name", worker.name, "",
        "Worker id; empty: WARREN_WORKER_NAME or the host name (a StatefulSet pod name works)"),
    INT("worker.max_concurrency", worker.max_concurrency, "16", 1, 1024,
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
    R_INT("worker.retire_after_s", worker.retire_after_s, "3600", 0, 30 * 86400,
          "The executor's setting, under worker. as issue 8 names it: a worker without a fresh "
          "heartbeat whose last one is older than this is retired (what is left in its queue is "
          "taken back: unpinned executions are retried, pinned ones fail; the queue is deleted; "
          "the row says retired until the worker heartbeats again); 0: never"),
    STR("worker.http_listen", worker.http_listen, "",
        "host:port of the worker's /livez, /readyz and /metrics (e.g. \"0.0.0.0:9464\" in a pod); "
        "\"\" turns them off"),
    STR("worker.http_tls_cert_file", worker.http_tls_cert_file, "",
        "PEM certificate (with its chain) for HTTPS on worker.http_listen, with "
        "worker.http_tls_key_file; \"\" serves plain HTTP. Read at start"),
    STR("worker.http_tls_key_file", worker.http_tls_key_file, "",
        "PEM private key of worker.http_tls_cert_file (not encrypted)"),
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
