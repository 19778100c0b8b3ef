#!/usr/bin/env bash
# A dispatch pinned to a worker that never consumes expires from its queue (1 s TTL), reaches the
# dead-letter queue, and the executor fails the execution ("Worker queue TTL expired", x-death in
# the result) and records one dead_letters row: the full path, with real broker expiry.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w gone  # never heartbeats, never consumes
action=$(unique_name act)
forget_executions "$action"
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=1000
# The monitor would abandon the 'running' row below (its worker never heartbeats) and race the
# dead letter this test is about; executor_monitor covers the monitor.
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0
exec_start ex

id=$(new_execution "$action" "$w")
start=$(date +%s%N)
wait_until 10 "[ \"\$(exec_field $id status)\" = failed ]"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
log "failed after ${elapsed_ms} ms (TTL 1000 ms)"
[ "$elapsed_ms" -lt 5000 ] || fail "expiry took ${elapsed_ms} ms, expected TTL + a small bound"

assert_eq "Worker queue TTL expired|$w|1" "$(exec_field "$id" "error, worker, attempt")" "failed row"
result=$(exec_field "$id" result)
assert_eq "Worker queue TTL expired|$w|1|expired|worker.$w.executions|1|execution.dispatch.worker.$w" \
    "$(jq -r '"\(.error)|\(.worker)|\(.attempt)|\(.x_death[0].reason)|\(.x_death[0].queue)|\(.x_death[0].count)|\(.x_death[0]["routing-keys"][0])"' <<<"$result")" \
    "result JSON"
assert_contains "$(jq -r .message <<<"$result")" "worker.$w.executions" "result message names the queue"
assert_contains "$(jq -r .expired_at <<<"$result")" "T" "expired_at is a time"

row=$(psql_q "select json_build_object('n', count(*), 'reason', min(reason), 'queue', min(queue),
    'exchange', min(exchange), 'key', min(routing_key), 'type', min(message_type),
    'snap', min(snapshot->>'status'), 'xdeath', min(headers->'x-death'->0->>'reason'),
    'body_id', min((convert_from(body, 'UTF8')::json->'payload'->>'execution_id')),
    'dedup', min(dedup_key)) from dead_letters where execution_id = $id")
assert_eq "1|expired|worker.$w.executions|$TOPO_EXCHANGE|execution.dispatch.worker.$w|ExecutionRequested|scheduled|expired|$id" \
    "$(jq -r '"\(.n)|\(.reason)|\(.queue)|\(.exchange)|\(.key)|\(.type)|\(.snap)|\(.xdeath)|\(.body_id)"' <<<"$row")" \
    "dead_letters row"
assert_contains "$(jq -r .dedup <<<"$row")" "/worker.$w.executions/expired/1/" "dedup key"
assert_eq 0 "$(queue_messages "$TOPO_DLQ")" "dead-letter queue drained"

# A leftover copy of a dispatch whose attempt already runs (ack lost, requeued, expired) is
# recorded but must not fail the healthy execution.
run_id=$(psql_q "insert into executions (action_ref, pinned_worker, status, worker, attempt, started_at)
    values ('$action', '$w', 'running', '$w', 1, now()) returning id")
publish "" "$TOPO_DLQ" "$(envelope ExecutionRequested "{\"execution_id\": $run_id, \"worker_id\": \"$w\",
    \"action_ref\": \"$action\", \"params\": {}, \"attempt\": 1, \"timeout_s\": 0}" 1)"
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $run_id\")\" = 1 ]"
assert_eq "execution_started" "$(psql_q "select reason from dead_letters where execution_id = $run_id")" \
    "leftover dispatch of a running attempt"
assert_eq "running" "$(exec_field "$run_id" status)" "running execution left alone"

exec_stop "$EXEC_PID" ex
assert_eq "expired=1,execution_started=1" "$(stat_of "$EXEC_STATS" dead_letters)" "dead letters by reason"
assert_eq 1 "$(stat_of "$EXEC_STATS" dlq_failed_executions)" "executions failed by the handler"
pass
