#!/usr/bin/env bash
# RabbitMQ goes away while executions are requested: the publish breaker opens, the executions
# wait as requested (never failed), and once the broker is back and the breaker closes they are
# dispatched.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w wait
action=$(unique_name act)
forget_executions "$action"
on_exit "stack rabbit-start >/dev/null 2>&1"
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare the worker queue ($RUN_ERR)"
export WARREN__CIRCUIT_BREAKER__MESSAGING__FAILURE_THRESHOLD=2
export WARREN__CIRCUIT_BREAKER__MESSAGING__OPEN_TIMEOUT_S=2
export WARREN__CIRCUIT_BREAKER__MESSAGING__SUCCESS_THRESHOLD=1
export WARREN__MESSAGE_QUEUE__RABBITMQ__CONNECT_TIMEOUT_MS=1000
export WARREN__MESSAGE_QUEUE__RABBITMQ__PUBLISH_TIMEOUT_MS=1000
exec_start ex
heartbeat "$w" "$action" 10 120
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"

stack rabbit-stop
ids=()
for i in 1 2 3; do ids+=("$(new_execution "$action")"); done
id_list=$(IFS=,; echo "${ids[*]}")
wait_log ex '"publish breaker open' 20
wait_log ex '"from":"half_open","to":"open"' 20 # a half-open probe failed; they must still wait
assert_eq 3 "$(psql_q "select count(*) from executions where id in ($id_list) and status = 'requested'")" \
    "waiting as requested while the broker is down"
kill -0 "$EXEC_PID" || fail "the executor died with the broker"

stack rabbit-start
wait_until 40 "[ \"\$(psql_q \"select count(*) from executions where id in ($id_list) and status = 'scheduled'\")\" = 3 ]"
wait_until 10 "[ \"\$(queue_messages 'worker.$w.executions')\" = 3 ]"
assert_eq 0 "$(psql_q "select count(*) from execution_history where execution_id in ($id_list)
    and to_status not in ('requested', 'scheduled')")" "never failed, only back and forth"
wait_log ex '"publish breaker closed: dispatching again"' 5
# The consumers came back too: a heartbeat is recorded again.
psql_q "update workers set host = 'before' where id = '$w'" >/dev/null
heartbeat "$w" "$action" 10 120
wait_until 20 "[ \"\$(psql_q \"select host from workers where id = '$w'\")\" = test-host ]"

exec_stop "$EXEC_PID" ex
assert_eq 3 "$(stat_of "$EXEC_STATS" dispatched)" "dispatched once the broker was back"
pass
