#!/usr/bin/env bash
# Dispatches the worker cannot take are nacked without requeue, so the broker dead-letters them
# into the DLQ (x-death reason rejected) where the executor records them: a body that is not
# JSON, an envelope of another type, a payload missing a field, a dispatch for another worker.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

new_worker w reject
wq="worker.$w.executions"
start_worker worker "$w"
id=$(exec_id)

publish_dispatch "$w" 'this is not json {'
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.echo '{}' | jq -c '.message_type = "WorkerHeartbeat"')"
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.echo '{}' | jq -c 'del(.payload.action_ref)')"
publish_dispatch "$w" "$(dispatch_body "$id" other-worker core.echo '{}')"

# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(queue_messages "'"$TOPO_DLQ"'")" = 4 ]'
collect "$TOPO_DLQ"
dead=$(msgs "$TOPO_DLQ" true)
assert_eq '["rejected"]' "$(jq -c '[.[].properties.headers["x-death"][0].reason] | unique' <<<"$dead")" "x-death reasons"
assert_eq "[\"$wq\"]" "$(jq -c '[.[].properties.headers["x-death"][0].queue] | unique' <<<"$dead")" "x-death queue"
assert_eq 'this is not json {' "$(jq -r '.[0].raw' <<<"$dead")" "the body is kept as it was"
assert_eq "execution.dispatch.worker.$w" "$(jq -r '.[0].routing_key' <<<"$dead")" "original routing key"

log=$(bg_log worker)
assert_contains "$(grep -c '"msg":"dispatch rejected; dead-lettered"' "$log")" 4 "one log line each"
assert_contains "$(cat "$log")" "body is not valid JSON"
assert_contains "$(cat "$log")" "message_type 'WorkerHeartbeat' is not ExecutionRequested"
assert_contains "$(cat "$log")" "field 'payload.action_ref' is missing"
assert_contains "$(cat "$log")" "dispatch for worker 'other-worker' reached worker '$w'"

# Nothing ran, nothing was reported, the worker queue is empty, and the worker still works.
collect "$TOPO_RESULTS"
assert_eq 0 "$(msgs "$TOPO_RESULTS" true | jq length)" "no reports for rejected dispatches"
assert_eq 0 "$(queue_messages "$wq")" "worker queue empty"
publish_dispatch "$w" "$(dispatch_body "$((id + 1))" "$w" core.noop '{}')"
wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 1))")" >/dev/null
stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"rejected":"4"'
pass
