#!/usr/bin/env bash
# Trace context end to end (docs/api.md, "Trace context"): a W3C traceparent given on submit
# (the header, or the field, which wins) is kept on the row, carried in the dispatch to the
# handler's environment (TRACEPARENT), and shown in the answer, the result's execution document
# and the ExecutionEnded event; without one the execution gets one derived from its id
# (warren_traceparent), the same everywhere. A malformed one is 400, and a replayed idempotent
# submission with another traceparent is still a replay.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

worker_env
test_handlers_dir
cat >"$WARREN__WORKER__HANDLERS_DIR/test.trace" <<'HANDLER'
#!/bin/sh
printf '{"traceparent": "%s"}' "$TRACEPARENT"
HANDLER
chmod 755 "$WARREN__WORKER__HANDLERS_DIR/test.trace"
events_inbox 'execution.ended.*.test.trace'
export WARREN__EVENTS__INTERVAL_MS=100
api_start ex
new_worker w rw
start_worker wk "$w"
forget_executions test.trace
wait_until 20 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"

T1=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
T2=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01
# run ID: wait for its end; prints "answer's|result's|event's traceparent"
run() {
    expect 200 GET "/api/v1/executions/$1?wait_s=30"
    local doc=$CALL_BODY
    assert_eq completed "$(jq -r .status <<<"$doc")" "execution $1"
    wait_until 10 "queue_get $inbox 100 | jq -e --arg id $1 'any(.[]; .properties.correlation_id == \$id)' >/dev/null"
    local ev; ev=$(queue_get "$inbox" 100 | jq -r --arg id "$1" '.[] | select(.properties.correlation_id == $id) | .payload | fromjson | .payload.traceparent')
    printf '%s|%s|%s\n' "$(jq -r .traceparent <<<"$doc")" "$(jq -r .result.traceparent <<<"$doc")" "$ev"
}

log "the traceparent header reaches the handler, the answers and the event"
CALL_HEADER="traceparent: $T1" expect 201 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"worker\":\"$w\"}"
id=$(jq -r .id <<<"$CALL_BODY")
assert_eq "$T1" "$(jq -r .traceparent <<<"$CALL_BODY")" "the submit answer"
assert_eq "$T1" "$(exec_field "$id" traceparent)" "the row"
assert_eq "$T1|$T1|$T1" "$(run "$id")" "answer|handler|event"

log "the field wins over the header"
CALL_HEADER="traceparent: $T1" expect 201 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"worker\":\"$w\",\"traceparent\":\"$T2\"}"
id=$(jq -r .id <<<"$CALL_BODY")
assert_eq "$T2|$T2|$T2" "$(run "$id")" "answer|handler|event"

log "none given: one derived from the id, the same everywhere, nothing stored"
expect 201 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"worker\":\"$w\"}"
id=$(jq -r .id <<<"$CALL_BODY")
gen=$(jq -r .traceparent <<<"$CALL_BODY")
[[ $gen =~ ^00-[0-9a-f]{32}-[0-9a-f]{16}-01$ ]] || fail "generated traceparent '$gen'"
assert_eq "$gen" "$(psql_q "select warren_traceparent($id, null)")" "derived from the id"
assert_eq "" "$(exec_field "$id" traceparent)" "no value stored"
assert_eq "$gen|$gen|$gen" "$(run "$id")" "answer|handler|event"

log "malformed: 400"
CALL_HEADER="traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01" \
    expect 400 POST /api/v1/executions "{\"action_ref\":\"test.trace\"}"
assert_contains "$(jq -r .detail <<<"$CALL_BODY")" "traceparent"
expect 400 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"traceparent\":\"00-00000000000000000000000000000000-00f067aa0ba902b7-01\"}"
expect 400 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"traceparent\":7}"

log "an idempotent replay with another traceparent is still a replay"
k=$(unique_name key)
CALL_HEADER="traceparent: $T1" expect 201 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"worker\":\"$w\",\"idempotency_key\":\"$k\"}"
id=$(jq -r .id <<<"$CALL_BODY")
CALL_HEADER="traceparent: $T2" expect 200 POST /api/v1/executions "{\"action_ref\":\"test.trace\",\"worker\":\"$w\",\"idempotency_key\":\"$k\"}"
assert_eq "$id|true|$T1" "$(jq -r '"\(.id)|\(.replayed)|\(.traceparent)"' <<<"$CALL_BODY")" "the replay keeps the first trace"
pass
