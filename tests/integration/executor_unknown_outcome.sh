#!/usr/bin/env bash
# A dispatch written without an answer (the broker stops responding: SIGSTOP, as with a
# confirm that never comes) may be in the worker's queue: it stays scheduled on its attempt
# instead of going out again, so it is delivered once. A result of an older attempt (a copy
# that ran after all) changes nothing but leaves a dead letter: stale_attempt_result.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w unk
action=$(unique_name act)
forget_executions "$action"
export WARREN__MESSAGE_QUEUE__RABBITMQ__PUBLISH_TIMEOUT_MS=500
exec_start ex
heartbeat_seen "$w" "$action"

# The broker's Erlang VM, stopped: the kernel still takes the publish, nothing answers.
beam=$(cat "$WARREN_STACK_DIR/rabbit/rabbit.pid")
on_exit "kill -CONT $beam 2>/dev/null || true"
kill -STOP "$beam"
id=$(new_execution "$action")
wait_log ex '"dispatch outcome unknown; it stays scheduled"' 15
sleep 3 # several scheduler ticks: nothing goes out again
kill -CONT "$beam"
assert_eq "scheduled|1" "$(exec_field "$id" "status, attempt")" "still scheduled on its first attempt"
wait_until 15 "[ \"\$(queue_messages 'worker.$w.executions')\" = 1 ]"
sleep 2
assert_eq 1 "$(queue_messages "worker.$w.executions")" "delivered once"
assert_eq "scheduled|1" "$(exec_field "$id" "status, attempt")" "still the first attempt"
report "$w" "$id" 1 running
wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"

# Had it gone out again (attempt 2), the first copy's results would be for an older attempt.
psql_q "update executions set attempt = 2 where id = $id" >/dev/null
report "$w" "$id" 1 completed '{"copy": 1}'
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $id\")\" = 1 ]"
assert_eq "stale_attempt_result|running|" \
    "$(psql_q "select d.reason, e.status, e.result from dead_letters d join executions e on e.id = d.execution_id
               where d.execution_id = $id")" "a trace, and nothing changed"
assert_contains "$(psql_q "select error from dead_letters where execution_id = $id")" \
    "a result of attempt 1; the execution is on attempt 2"

exec_stop "$EXEC_PID" ex
[ "$(stat_of "$EXEC_STATS" dispatch_unknown)" -ge 1 ] || fail "dispatch_unknown not counted"
assert_eq 0 "$(stat_of "$EXEC_STATS" dispatch_reverted)" "nothing reverted"
pass
