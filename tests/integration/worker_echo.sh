#!/usr/bin/env bash
# A core.echo dispatch: the worker reports running, then completed with the params as the result
# and the dispatch's attempt, with the documented properties; the dispatch is acked. The same
# dispatch sent again is answered with the same completion (marked "repeat") without running
# twice; core.noop (in-process) completes with {}.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

new_worker w echo
wq="worker.$w.executions"
start_worker worker "$w"

id=$(exec_id)
params='{"message":"hello \u00e9 / \"q\"","n":1.50,"list":[1,{"a":null}],"big":12345678901234567890}'
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.echo "$params" 3 20)"

st=$(wait_msg "$TOPO_RESULTS" "$(is_status "$id")")
assert_eq "execution.status.$w" "$(jq -r .routing_key <<<"$st")" "status routing key"
assert_eq ExecutionStatusChanged "$(jq -r .properties.type <<<"$st")" "status type property"
assert_eq "$id" "$(jq -r .properties.correlation_id <<<"$st")" "status correlation_id"
assert_eq "$id" "$(jq -r .properties.headers.execution_id <<<"$st")" "status execution_id header"
assert_eq "running 3 $w $id" \
    "$(jq -r '.body.payload | "\(.status) \(.attempt) \(.worker_id) \(.execution_id)"' <<<"$st")" "running payload"
assert_eq "trace-$id" "$(jq -r .body.headers.trace_id <<<"$st")" "trace id carried over"
assert_eq 3 "$(jq -r .body.headers.attempt <<<"$st")" "envelope attempt"
assert_eq 20 "$(jq -r .body.payload.timeout_s <<<"$st")" "the timeout applied: the dispatch's"
inc=$(jq -r .body.payload.incarnation <<<"$st")
[[ "$inc" =~ ^[0-9a-f]{32}$ ]] || fail "incarnation in the running status: $inc"

done_msg=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")")
assert_eq "execution.completed.$w" "$(jq -r .routing_key <<<"$done_msg")" "completion routing key"
assert_eq ExecutionCompleted "$(jq -r .properties.type <<<"$done_msg")" "completion type property"
assert_eq "$id" "$(jq -r .properties.headers.execution_id <<<"$done_msg")" "completion execution_id header"
assert_eq "$(jq -r .body.message_id <<<"$done_msg")" "$(jq -r .properties.message_id <<<"$done_msg")" \
    "message_id property = envelope message_id"
p=$(jq -c .body.payload <<<"$done_msg")
assert_eq "completed 3 $w 0 0 null false" \
    "$(jq -r '"\(.status) \(.attempt) \(.worker_id) \(.exit_code) \(.signal) \(.error) \(.truncated)"' <<<"$p")" \
    "completion payload"
assert_eq "$(jq -cS . <<<"$params")" "$(jq -cS .result <<<"$p")" "result = the params"
assert_eq "$(jq -r '.body.payload.started_at' <<<"$st")" "$(jq -r .started_at <<<"$p")" "started_at"
assert_eq "$inc" "$(jq -r .incarnation <<<"$p")" "the completion carries the same incarnation"
assert_eq "$inc" "$(wait_msg "$TOPO_HEARTBEATS" "$(is_heartbeat "$w")" | jq -r .body.payload.incarnation)" \
    "so do the heartbeats"
assert_contains "$(jq -r .ended_at <<<"$p")" "T"
assert_eq true "$(jq '.duration_ms >= 0' <<<"$p")" "duration_ms"
wait_settled "$wq"

# The result travels exactly as the handler printed it (json-c would rewrite 1.50 and clamp the
# 20-digit integer if it re-encoded the result).
publish_dispatch "$w" "$(dispatch_body "$((id + 1))" "$w" core.echo '{"x":1.50,"y":12345678901234567890}')"
exact=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 1))")")
assert_eq 300 "$(msgs "$TOPO_RESULTS" "$(is_status "$((id + 1))")" | jq '.[0].body.payload.timeout_s')" \
    "no timeout in the dispatch: worker.default_timeout_s applies"
assert_contains "$(jq -r .raw <<<"$exact")" '"result":{"x":1.50,"y":12345678901234567890}' "result bytes"

# The same dispatch again (as a redelivery, or a database that lost the completion, would bring
# it): not run a second time, its completion is sent again, marked, under a new message id.
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.echo "$params" 3 20)"
wait_log worker '"msg":"dispatch of an execution this worker already finished: not run again, its completion is sent again"' 10
again=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id") and .body.payload.repeat == true")
assert_eq "$(jq -c '.body.payload + {repeat: true}' <<<"$done_msg")" "$(jq -c .body.payload <<<"$again")" \
    "the same payload, plus repeat: true"
[ "$(jq -r .body.message_id <<<"$again")" != "$(jq -r .body.message_id <<<"$done_msg")" ] ||
    fail "a repeated completion is a new message"
wait_settled "$wq"

# In-process handler.
publish_dispatch "$w" "$(dispatch_body "$((id + 2))" "$w" core.noop '{}')"
noop=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 2))")")
assert_eq 'completed {}' "$(jq -rc '.body.payload | "\(.status) \(.result | tojson)"' <<<"$noop")" "core.noop"

stop_worker worker "$BG_PID"
collect "$TOPO_RESULTS"
assert_eq 2 "$(msgs "$TOPO_RESULTS" "$(is_completion "$id")" | jq length)" "the completion and its repeat"
assert_eq 1 "$(msgs "$TOPO_RESULTS" "$(is_status "$id")" | jq length)" "one running status for the duplicate"
assert_contains "$WORKER_STATS" '"duplicates":"1"'
assert_contains "$WORKER_STATS" '"repeats":"1"'
assert_contains "$WORKER_STATS" '"completed":"3"'
pass
