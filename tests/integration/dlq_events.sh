#!/usr/bin/env bash
# Reliable dead-letter events (docs/dead-letters.md, "Events"): a record is committed first and
# then announced, confirmed, as ExecutionDeadLettered on events.exchange with
# execution.dead_lettered, its message_id the record's stable event_id; with the broker stopped
# while executions dead-letter (here: the staleness detector, which needs no broker) the records
# appear in PostgreSQL at once and stay unemitted, the failed publishes are counted, and once the
# broker is back the reconciler publishes every one of them and leaves none behind.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
on_exit "stack rabbit-start >/dev/null 2>&1" # whatever happens, the next test finds the broker up

isolate_topology
action=$(unique_name act)
forget_executions "$action"
events_inbox execution.dead_lettered
export WARREN__EVENTS__INTERVAL_MS=200
export WARREN__EVENTS__RETRY_INITIAL_MS=200 WARREN__EVENTS__RETRY_MAX_MS=1000
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0
export WARREN__STALENESS__INTERVAL_S=1 WARREN__STALENESS__REQUESTED_BY_ACTION="$action=2"
api_start ex

# event_ids: the event ids in the inbox (messages stay there), sorted. Records of other tests
# that were not emitted yet may be there too: the emitter announces every record.
event_ids() {
    queue_get "$inbox" 1000 | jq -r '.[].properties.message_id' | sort -u
}
record_ids() { # the records of this test's executions, sorted by event id
    psql_q "select d.event_id from dead_letters d join executions e on e.id = d.execution_id
            where e.action_ref = '$action'" | sort
}

log "a record is announced once committed"
id=$(new_execution "$action")
wait_until 15 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $id and emitted_at is not null\")\" = 1 ]"
wait_until 10 "[ \"\$(queue_messages $inbox)\" -ge 1 ]"
msg=$(queue_get "$inbox" 1000 | jq -c --arg id "$id" '[.[] | select(.properties.correlation_id == $id)]')
event_id=$(psql_q "select event_id from dead_letters where execution_id = $id")
assert_eq "$event_id|ExecutionDeadLettered|execution.dead_lettered|$id|staleness_timeout|staleness_timeout|$event_id" \
    "$(jq -r '.[0] | "\(.properties.message_id)|\(.properties.type)|\(.routing_key)|\(.properties.correlation_id)|\(.payload | fromjson | .payload.reason)|\(.payload | fromjson | .payload.cause)|\(.payload | fromjson | .payload.event_id)"' <<<"$msg")" \
    "the event"
assert_eq 2 "$(jq -r '.[0].properties.delivery_mode' <<<"$msg")" "a persistent message"

log "the broker stopped while executions dead-letter"
stack rabbit-stop
ids=()
for i in 1 2 3; do ids+=("$(new_execution "$action")"); done
in_list=$(IFS=,; echo "${ids[*]}")
wait_until 15 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id in ($in_list)\")\" = 3 ]"
assert_eq 3 "$(psql_q "select count(*) from dead_letters where execution_id in ($in_list) and emitted_at is null")" \
    "records in PostgreSQL at once, not yet emitted"
# shellcheck disable=SC2317 # called in wait_until's condition
failed() { curl -sS "$API/metrics" | awk '/^warren_dead_letter_events_total\{result="failed"\}/ {print $2}'; }
wait_until 15 "[ \"\$(failed)\" -ge 3 ]"
wait_log ex '"msg":"dead-letter events not published; the records stay unemitted"' 5

log "the broker is back: the reconciler leaves none behind"
stack rabbit-start
wait_until 60 "[ \"\$(psql_q \"select count(*) from dead_letters d join executions e on e.id = d.execution_id
    where e.action_ref = '$action' and d.emitted_at is null\")\" = 0 ]"
wait_until 20 "[ \"\$(queue_messages $inbox)\" -ge 4 ]"
assert_eq "" "$(comm -23 <(record_ids) <(event_ids))" "every record's event on the bus"
assert_eq 4 "$(record_ids | wc -l)" "this test's records"
wait_log ex '"msg":"dead-letter events published again"' 5
pass
