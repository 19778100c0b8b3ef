#!/usr/bin/env bash
# `warren topology declare` creates exactly the configured topology: exchange types, queue arguments,
# binding keys (classic, quorum, and dead-lettering disabled), idempotently; the CLI's usage errors.
# shellcheck disable=SC2154 # w, w_nodlx, w_q are set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
require_stack

export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=123456
export WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__TTL_MS=7200000

# --- classic ---
isolate_topology
new_worker w w
wq="worker.$w.executions"
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare exit status ($RUN_ERR)"

assert_eq topic "$(exchange_json "$TOPO_EXCHANGE" | jq -r .type)" "executions exchange type"
assert_eq fanout "$(exchange_json "$TOPO_DLX" | jq -r .type)" "dead-letter exchange type"
assert_eq "true,true" "$(exchange_json "$TOPO_EXCHANGE" | jq -r .durable),$(exchange_json "$TOPO_DLX" | jq -r .durable)" \
    "exchanges durable"

assert_eq "{\"x-dead-letter-exchange\":\"$TOPO_DLX\",\"x-message-ttl\":123456}" \
    "$(queue_json "$wq" | jq -cS .arguments)" "worker queue arguments"
assert_eq "classic true" "$(queue_json "$wq" | jq -r '"\(.type) \(.durable)"')" "worker queue type"
assert_eq "{\"x-dead-letter-exchange\":\"\",\"x-dead-letter-routing-key\":\"$TOPO_PARKING\",\"x-message-ttl\":7200000}" \
    "$(queue_json "$TOPO_DLQ" | jq -cS .arguments)" \
    "dead-letter queue: retention TTL, then to the parking queue through the default exchange"
assert_eq '{}' "$(queue_json "$TOPO_PARKING" | jq -cS .arguments)" "parking queue: kept until consumed"
assert_eq '{}' "$(queue_json "$TOPO_RESULTS" | jq -cS .arguments)" "results queue arguments"
assert_eq '{"x-message-ttl":60000}' "$(queue_json "$TOPO_HEARTBEATS" | jq -cS .arguments)" \
    "heartbeat queue arguments"

assert_eq "execution.dispatch.worker.$w" "$(binding_keys "$TOPO_EXCHANGE" "$wq")" "worker queue binding"
assert_eq "execution.completed.#,execution.status.#" "$(binding_keys "$TOPO_EXCHANGE" "$TOPO_RESULTS")" \
    "results queue bindings"
assert_eq "worker.heartbeat.#" "$(binding_keys "$TOPO_EXCHANGE" "$TOPO_HEARTBEATS")" "heartbeat binding"
assert_eq 1 "$(mgmt_get "bindings/%2F/e/$TOPO_DLX/q/$TOPO_DLQ" | jq length)" "dead-letter queue bound"

run_warren redeclare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declaring again is a no-op ($RUN_ERR)"
run_warren verify topology verify --worker "$w" --mgmt-url "$WARREN_MGMT_URL"
assert_eq 0 "$RUN_RC" "verify right after declare ($RUN_OUT)"
assert_contains "$RUN_OUT" "no differences between the broker and the configuration"

# --- a dead-letter queue declared by an older warren (no parking) is kept, with a warning, and
# verify reports the difference; refusing it would stop every executor and worker at an upgrade ---
isolate_topology
mgmt_put "queues/%2F/$(urlencode "$TOPO_DLQ")" '{"durable":true,"arguments":{"x-message-ttl":7200000}}' >/dev/null
run_warren legacy topology declare
assert_eq 0 "$RUN_RC" "declare over an older dead-letter queue ($RUN_ERR)"
assert_contains "$RUN_ERR" "queue declared by an older warren: kept as it is"
assert_contains "$RUN_ERR" "x-dead-letter-exchange='' (the default exchange)"
assert_eq '{"x-message-ttl":7200000}' "$(queue_json "$TOPO_DLQ" | jq -cS .arguments)" "left as it was"
assert_eq 0 "$(queue_messages "$TOPO_PARKING")" "the parking queue exists anyway"
run_warren legacy-verify topology verify --mgmt-url "$WARREN_MGMT_URL"
assert_eq 1 "$RUN_RC" "verify reports the older queue"
assert_contains "$RUN_OUT" "queue '$TOPO_DLQ' has no x-dead-letter-routing-key but configuration wants '$TOPO_PARKING'"

# --- dead-lettering disabled: no DLX on the worker queue, and a warning says what that costs ---
new_worker w_nodlx nodlx
WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__ENABLED=false run_warren nodlx topology declare --worker "$w_nodlx"
assert_eq 0 "$RUN_RC" "declare without dead-lettering ($RUN_ERR)"
assert_eq '{"x-message-ttl":123456}' "$(queue_json "worker.$w_nodlx.executions" | jq -cS .arguments)" \
    "worker queue without a dead-letter exchange"
assert_contains "$RUN_ERR" "dead-lettering is disabled: dispatches that expire in this worker queue are dropped"

# --- quorum: its own names, since classic queues of the same name cannot become quorum ---
isolate_topology
new_worker w_q quorum
WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUE_TYPE=quorum run_warren quorum topology declare --worker "$w_q"
assert_eq 0 "$RUN_RC" "quorum declare ($RUN_ERR)"
assert_eq "{\"x-dead-letter-exchange\":\"$TOPO_DLX\",\"x-dead-letter-strategy\":\"at-least-once\",\"x-message-ttl\":123456,\"x-overflow\":\"reject-publish\",\"x-queue-type\":\"quorum\"}" \
    "$(queue_json "worker.$w_q.executions" | jq -cS .arguments)" "quorum worker queue arguments"
for q in "worker.$w_q.executions" "$TOPO_DLQ" "$TOPO_PARKING" "$TOPO_RESULTS" "$TOPO_HEARTBEATS"; do
    assert_eq quorum "$(queue_json "$q" | jq -r .type)" "type of $q"
done
WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUE_TYPE=quorum run_warren quorum-verify topology verify --worker "$w_q"
assert_eq 0 "$RUN_RC" "quorum verify ($RUN_OUT)"

# --- usage and configuration errors exit 2 and touch nothing ---
run_warren help topology --help
assert_eq 0 "$RUN_RC" "--help"
assert_contains "$RUN_OUT" "warren topology verify [-c FILE] [--worker ID ...] [--mgmt-url URL]"
run_warren noaction topology
assert_eq 2 "$RUN_RC" "no action"
run_warren badaction topology remove
assert_eq 2 "$RUN_RC" "unknown action"
run_warren badworker topology declare --worker 'w.*'
assert_eq 2 "$RUN_RC" "wildcard in a worker id"
assert_contains "$RUN_ERR" "invalid worker id 'w.*'"
run_warren mgmtdeclare topology declare --mgmt-url "$WARREN_MGMT_URL"
assert_eq 2 "$RUN_RC" "--mgmt-url with declare"
WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUE_TYPE=bogus run_warren badcfg topology declare
assert_eq 2 "$RUN_RC" "configuration error"
assert_contains "$RUN_ERR" "queue_type"

# --- broker down (nothing listens): exit 1 with the reason ---
WARREN__MESSAGE_QUEUE__RABBITMQ__URL="amqp://guest:guest@127.0.0.1:1/%2f" \
    WARREN__MESSAGE_QUEUE__RABBITMQ__CONNECT_TIMEOUT_MS=500 run_warren down topology declare
assert_eq 1 "$RUN_RC" "declare without a broker"
assert_contains "$RUN_ERR" "warren topology declare: "
pass
