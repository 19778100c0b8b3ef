#!/usr/bin/env bash
# Completion events (docs/api.md, "Completion events"): every terminal transition is written to
# the outbox (schema 037) by the transaction that ends the execution, then published, confirmed,
# as ExecutionEnded on events.exchange with routing key execution.ended.<status>.<action_ref> and
# a stable event id, and deleted from the outbox. A queue bound to execution.ended.# receives one
# for each terminal status: completed, failed and timeout from a real worker, cancelled through
# the API, abandoned (the monitor's transition, here written by hand). With the broker stopped
# the events wait in the outbox and are published once it is back; with events.enabled off the
# outbox is emptied unannounced and counted.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
on_exit "stack rabbit-start >/dev/null 2>&1" # whatever happens, the next test finds the broker up

worker_env
events_inbox execution.ended.#
export WARREN__EVENTS__INTERVAL_MS=100
export WARREN__EVENTS__RETRY_INITIAL_MS=200 WARREN__EVENTS__RETRY_MAX_MS=1000
api_start ex
new_worker w rw
start_worker wk "$w"
for a in core.echo core.fail core.sleep; do forget_executions "$a"; done
wait_until 20 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"

submit() { # submit JSON: the new execution's id
    expect 201 POST /api/v1/executions "$1"
    jq -r .id <<<"$CALL_BODY"
}
# event ID: the inbox's ExecutionEnded event(s) of execution ID, as "routing key|type|status|attempt"
event() {
    queue_get "$inbox" 1000 | jq -r --arg id "$1" '.[] | select(.properties.correlation_id == $id)
        | (.payload | fromjson) as $e
        | "\(.routing_key)|\(.properties.type)|\($e.payload.status)|\($e.payload.attempt)|\(.properties.message_id == $e.message_id)"'
}

log "completed, failed, timeout from a real worker; cancelled through the API; abandoned by hand"
ok=$(submit "{\"action_ref\":\"core.echo\",\"params\":{\"x\":1},\"worker\":\"$w\"}")
bad=$(submit "{\"action_ref\":\"core.fail\",\"params\":{\"code\":3},\"worker\":\"$w\",\"max_attempts\":1}")
slow=$(submit "{\"action_ref\":\"core.sleep\",\"params\":{\"seconds\":10},\"worker\":\"$w\",\"timeout_s\":1,\"max_attempts\":1}")
gone=$(submit "{\"action_ref\":\"core.echo\",\"worker\":\"absent-$w\"}")
expect 200 POST "/api/v1/executions/$gone/cancel" # not started: cancelled at once
lost=$(submit "{\"action_ref\":\"core.echo\",\"worker\":\"absent2-$w\"}")
psql_q "update executions set status = 'abandoned', error = 'lost by hand' where id = $lost" >/dev/null
all="$ok,$bad,$slow,$gone,$lost"
wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($all) and ended_at is not null\")\" = 5 ]"
wait_until 10 "[ \"\$(psql_q \"select count(*) from execution_ended_events where execution_id in ($all)\")\" = 0 ]"
wait_until 10 "[ \"\$(queue_messages $inbox)\" -ge 5 ]"
assert_eq "execution.ended.completed.core.echo|ExecutionEnded|completed|1|true" "$(event "$ok")" "completed"
assert_eq "execution.ended.failed.core.fail|ExecutionEnded|failed|1|true" "$(event "$bad")" "failed"
assert_eq "execution.ended.timeout.core.sleep|ExecutionEnded|timeout|1|true" "$(event "$slow")" "timeout"
assert_eq "execution.ended.cancelled.core.echo|ExecutionEnded|cancelled|$(exec_field "$gone" attempt)|true" "$(event "$gone")" "cancelled"
assert_eq "execution.ended.abandoned.core.echo|ExecutionEnded|abandoned|$(exec_field "$lost" attempt)|true" "$(event "$lost")" "abandoned"
body=$(queue_get "$inbox" 1000 | jq -c --arg id "$bad" '.[] | select(.properties.correlation_id == $id) | .payload | fromjson | .payload')
assert_eq "$bad|$w|core.fail|0" "$(jq -r '"\(.execution_id)|\(.worker)|\(.action_ref)|\(.result_bytes)"' <<<"$body")" "the body"
assert_contains "$(jq -r .error <<<"$body")" "3"
[ "$(jq -r '.created_at != null and .started_at != null and .ended_at != null' <<<"$body")" = true ] ||
    fail "the body lacks its times: $body"
assert_eq 2 "$(queue_get "$inbox" 1000 | jq -r --arg id "$ok" '.[] | select(.properties.correlation_id == $id) | .properties.delivery_mode')" "persistent"
metric() { curl -sS "$API/metrics" -H "Authorization: Bearer $API_WRITE_KEY" | awk -v m="warren_execution_ended_events_total{result=\"$1\"}" '$1 == m { print $2 }'; }
[ "$(metric published)" -ge 5 ] || fail "warren_execution_ended_events_total{result=\"published\"} is $(metric published)"

log "the broker stopped: the events wait in the outbox, and are published once it is back"
stack rabbit-stop
ids=()
for i in 1 2 3; do
    ids+=("$(psql_q "insert into executions (action_ref, pinned_worker) values ('core.echo', 'absent3-$w') returning id" | head -1)")
done
in_list=$(IFS=,; echo "${ids[*]}")
psql_q "update executions set status = 'cancelled', cancelled_by = 'test' where id in ($in_list)" >/dev/null
sleep 1
assert_eq 3 "$(psql_q "select count(*) from execution_ended_events where execution_id in ($in_list)")" "in the outbox while the broker is down"
stack rabbit-start
wait_until 60 "[ \"\$(psql_q \"select count(*) from execution_ended_events where execution_id in ($in_list)\")\" = 0 ]"
for id in "${ids[@]}"; do
    assert_eq "execution.ended.cancelled.core.echo|ExecutionEnded|cancelled|$(exec_field "$id" attempt)|true" "$(event "$id")" "after the outage ($id)"
done
[ "$(metric failed)" -ge 1 ] || fail "no failed publish was counted during the outage"

log "events.enabled off: the outbox is emptied unannounced, and counted"
exec_stop "$EXEC_PID" ex
export WARREN__EVENTS__ENABLED=false
api_start ex2
quiet=$(psql_q "insert into executions (action_ref, pinned_worker) values ('core.echo', 'absent4-$w') returning id" | head -1)
psql_q "update executions set status = 'cancelled', cancelled_by = 'test' where id = $quiet" >/dev/null
wait_until 10 "[ \"\$(psql_q \"select count(*) from execution_ended_events where execution_id = $quiet\")\" = 0 ]"
exec_stop "$EXEC_PID" ex2
[ "$(stat_of "$EXEC_STATS" ended_events_dropped)" -ge 1 ] || fail "nothing counted as dropped: $EXEC_STATS"
assert_eq "" "$(event "$quiet")" "no event with events.enabled off"
pass
