#!/usr/bin/env bash
# What an operator sees in the management UI: a dispatch in a worker queue, read through the
# management API's get (ackmode reject_requeue_true, as the UI's "Get messages" does), carries
# type, app_id, message_id, correlation_id, timestamp and the headers execution_id, attempt and
# action_ref; a worker's reports name the worker in app_id. Reading puts the messages back.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack

worker_env
new_worker w ui
action=$(unique_name ui.act)
forget_executions "$action"
mkdir "$TEST_TMP/handlers"
ln -s "$WARREN_SOURCE_DIR/handlers/core.echo" "$TEST_TMP/handlers/$action"
export WARREN__WORKER__HANDLERS_DIR="$TEST_TMP/handlers"
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare the topology ($RUN_ERR)"

# ui_get QUEUE: every message in QUEUE as the UI shows it; the broker requeues them.
ui_get() {
    mgmt_post "queues/%2F/$(urlencode "$1")/get" \
        '{"count":100,"ackmode":"reject_requeue_true","encoding":"auto"}'
}

exec_start ex
heartbeat "$w" "$action" 1 60
id=$(new_execution "$action" "$w" '{"n": 7}')
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
queue="worker.$w.executions"
wait_until 5 "[ \"\$(queue_messages '$queue')\" = 1 ]"
exec_stop "$EXEC_PID" ex # from here the results queue keeps what the worker sends

msg=$(ui_get "$queue")
assert_eq 1 "$(jq length <<<"$msg")" "one dispatch shown"
props=$(jq -c '.[0].properties' <<<"$msg")
assert_eq "ExecutionRequested|warren-executor|$id|$id|1|$action" \
    "$(jq -r '"\(.type)|\(.app_id)|\(.correlation_id)|\(.headers.execution_id)|\(.headers.attempt)|\(.headers.action_ref)"' <<<"$props")" \
    "dispatch properties and headers"
assert_eq "$(jq -r '.[0].payload | fromjson | .message_id' <<<"$msg")" "$(jq -r .message_id <<<"$props")" \
    "message_id is the envelope's"
ts=$(jq -r .timestamp <<<"$props")
now=$(date +%s)
{ [ "$ts" -le "$now" ] && [ "$ts" -ge $((now - 60)) ]; } || fail "timestamp $ts is not a recent time (now $now)"
assert_eq "number" "$(jq -r '.headers.attempt | type' <<<"$props")" "attempt is an integer header"
assert_eq 1 "$(queue_messages "$queue")" "reject_requeue_true put the dispatch back"

# The real worker consumes that dispatch; its reports wait in the results queue (no executor).
start_worker wk "$w"
wait_until 20 "ui_get '$TOPO_RESULTS' | jq -e 'any(.[]; .properties.type == \"ExecutionCompleted\")' >/dev/null"
reports=$(ui_get "$TOPO_RESULTS")
assert_eq "warren-worker/$w" "$(jq -r '[.[].properties.app_id] | unique | join(",")' <<<"$reports")" \
    "every report names its worker in app_id"
assert_eq "ExecutionCompleted|$id|$id|1" \
    "$(jq -r '.[] | .properties | select(.type == "ExecutionCompleted") |
        "\(.type)|\(.correlation_id)|\(.headers.execution_id)|\(.headers.attempt)"' <<<"$reports")" \
    "completion properties and headers"
assert_eq '{"n":7}' "$(jq -c '.[] | select(.properties.type == "ExecutionCompleted") | .payload | fromjson | .payload.result' <<<"$reports")" \
    "the completion's result"
assert_eq "$(jq length <<<"$reports")" "$(queue_messages "$TOPO_RESULTS")" "reports were put back"
bg_stop "$BG_PID" 15
pass
