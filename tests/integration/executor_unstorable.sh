#!/usr/bin/env bash
# A completion the executor cannot apply never leaves its execution running: a number outside
# jsonb's range, a body cut inside a UTF-8 character, a status that makes no sense fail the
# attempt with the reason, and the dead letter (unprocessable_result) names the execution. A
# transient database error (a lock timeout, SQLSTATE class 55) is retried, not stored as poison.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w unst
action=$(unique_name act)
forget_executions "$action"
# Every statement of the executor waits at most 1 s for a row lock.
export PGOPTIONS='-c lock_timeout=1000'
exec_start ex
heartbeat_seen "$w" "$action"

running_execution() { # prints the id of a new execution the fake worker reported running
    local id
    id=$(new_execution "$action")
    wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
    report "$w" "$id" 1 running
    wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"
    echo "$id"
}
# raw_completion ID PAYLOAD_TEXT: a completion whose payload is given as text (jq cannot carry
# 1e999999 or broken UTF-8).
raw_completion() {
    publish "$TOPO_EXCHANGE" "execution.completed.$w" \
        "{\"message_id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"correlation_id\":null,\"message_type\":\"ExecutionCompleted\",\"version\":1,\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"headers\":{\"source\":\"test\",\"attempt\":1,\"trace_id\":null},\"payload\":{\"execution_id\":$1,\"worker_id\":\"$w\",\"attempt\":1,$2}}"
}

huge=$(running_execution)
cut=$(running_execution)
odd=$(running_execution)
raw_completion "$huge" '"status":"completed","result":{"x":1e999999}'
raw_completion "$cut" "\"status\":\"failed\",\"error\":\"caf$(printf '\303')\""
raw_completion "$odd" '"status":"exploded","result":{}'
list="$huge,$cut,$odd"
wait_until 15 "[ \"\$(psql_q \"select count(*) from executions where id in ($list) and status = 'failed'\")\" = 3 ]"
assert_contains "$(exec_field "$huge" error)" "The worker's completion could not be applied: the database refused it: value overflows numeric format" \
    "number out of range"
assert_contains "$(exec_field "$cut" error)" "The worker's completion could not be applied: body is not valid UTF-8" \
    "text cut inside a character"
assert_contains "$(exec_field "$odd" error)" "status 'exploded' cannot be reported" "a status that makes no sense"
assert_eq "$w|1" "$(exec_field "$huge" "result->>'worker', result->>'attempt'")" "result says where"
assert_eq "$huge:unprocessable_result,$cut:unprocessable_result,$odd:unprocessable_result" \
    "$(psql_q "select string_agg(execution_id || ':' || reason, ',' order by execution_id)
               from dead_letters where execution_id in ($list)")" "dead letters name their execution"
wait_until 5 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"

# A row lock held longer than lock_timeout: the completion waits and is applied afterwards.
locked=$(running_execution)
psql_q "begin; select 1 from executions where id = $locked for update; select pg_sleep(4); commit" >/dev/null &
locker=$!
wait_until 5 "[ \"\$(psql_q \"select count(*) from pg_stat_activity where query like '%pg_sleep(4)%'
    and state = 'active' and pid <> pg_backend_pid()\")\" = 1 ]"
report "$w" "$locked" 1 completed '{"after": "the lock"}'
wait "$locker"
wait_until 15 "[ \"\$(exec_field $locked status)\" = completed ]"
assert_eq '{"after": "the lock"}' "$(exec_field "$locked" result)" "applied after the lock"
assert_eq 0 "$(psql_q "select count(*) from dead_letters where execution_id = $locked or
    (queue = '$TOPO_RESULTS' and reason = 'store_error')")" "no dead letter for a transient error"
assert_contains "$(cat "$(bg_log ex)")" "database error (transient; retrying later)" "the retry is logged"

exec_stop "$EXEC_PID" ex
assert_eq 3 "$(stat_of "$EXEC_STATS" results_unprocessable)" "counter"
pass
