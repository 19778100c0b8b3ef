#!/usr/bin/env bash
# Dead letters nobody consumes within the dead-letter queue's retention are not dropped: they move
# to the parking queue (the DLQ dead-letters into it through the default exchange), and the
# executor records them from there like any dead letter, decided by the dead-lettering that
# brought them to the DLQ, with a note and a log line saying how long they waited.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w parked
action=$(unique_name act)
forget_executions "$action"
export WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__TTL_MS=1000
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=1000
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare the topology ($RUN_ERR)"

# No executor runs: a dispatch expires in the worker queue, then in the dead-letter queue.
id=$(psql_q "insert into executions (action_ref, pinned_worker, status, worker, attempt,
                 scheduled_at, dispatch_confirmed_at)
             values ('$action', '$w', 'scheduled', '$w', 1, now(), now()) returning id")
publish "$TOPO_EXCHANGE" "execution.dispatch.worker.$w" "$(envelope ExecutionRequested "$(jq -cn \
    --argjson id "$id" --arg w "$w" --arg a "$action" \
    '{execution_id: $id, worker_id: $w, action_ref: $a, params: {}, attempt: 1, timeout_s: 0}')" 1)"
wait_until 15 "[ \"\$(queue_messages '$TOPO_PARKING')\" = 1 ]"
assert_eq "0 0" "$(queue_messages "worker.$w.executions") $(queue_messages "$TOPO_DLQ")" \
    "gone from the worker queue and the dead-letter queue"

exec_start ex
wait_until 10 "[ \"\$(exec_field $id status)\" = failed ]"
assert_eq "Worker queue TTL expired" "$(exec_field "$id" error)" "decided by its first dead-lettering"
assert_eq "expired|worker.$w.executions" \
    "$(psql_q "select reason, queue from dead_letters where execution_id = $id")" "its dead letter"
assert_contains "$(psql_q "select error from dead_letters where execution_id = $id")" \
    "it outlived the retention of $TOPO_DLQ and was recorded from $TOPO_PARKING"
wait_log ex "a dead letter outlived the dead-letter queue's retention" 5
wait_until 5 "[ \"\$(queue_messages '$TOPO_PARKING')\" = 0 ]"
exec_stop "$EXEC_PID" ex
[ "$(stat_of "$EXEC_STATS" dead_letter_age_s)" -ge 1 ] || fail "the dead letter's age is not in the stats line"
pass
