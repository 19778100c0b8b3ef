#!/usr/bin/env bash
# Worker results move executions forward (running, then completed with result and times), and
# only forward: a completion of an older attempt, or a 'running' after the end, changes nothing.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w res
action=$(unique_name act)
forget_executions "$action"
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare the worker queue ($RUN_ERR)"
exec_start ex
heartbeat "$w" "$action" 10 60
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"

# running, then completed: result, started_at, ended_at.
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
report "$w" "$id" 1 running
wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"
assert_eq "t|f|$w" "$(exec_field "$id" "started_at is not null, ended_at is not null, worker")" "running row"
report "$w" "$id" 1 completed '{"answer": 42, "text": "d\u00e9j\u00e0 vu"}'
wait_until 10 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq '{"text": "déjà vu", "answer": 42}|t|t|t' \
    "$(exec_field "$id" "result, started_at <= ended_at, ended_at is not null, error is null")" "completed row"
assert_eq "requested,scheduled,running,completed" \
    "$(psql_q "select string_agg(to_status, ',' order by seq) from execution_history where execution_id = $id")" \
    "history"

# Unreadable messages in the results queue are stored as dead letters and acked (a completion
# of a known execution and attempt that cannot be applied is unprocessable_result: it fails
# that attempt, which here is over already).
publish "$TOPO_EXCHANGE" "execution.completed.$w" "garbage { $RANDOM"
publish "$TOPO_EXCHANGE" "execution.status.$w" "$(envelope WorkerHeartbeat '{"worker_id": "x"}')"
publish "$TOPO_EXCHANGE" "execution.completed.$w" "$(envelope ExecutionCompleted '{"status": "completed"}' 1)"
publish "$TOPO_EXCHANGE" "execution.completed.$w" "$(envelope ExecutionCompleted "{\"execution_id\": $id, \"status\": \"exploded\"}" 1)"
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where queue = '$TOPO_RESULTS'\")\" = 4 ]"
assert_eq "missing_execution_id,parse_error,unknown_type,unprocessable_result" \
    "$(psql_q "select string_agg(reason, ',' order by reason) from dead_letters where queue = '$TOPO_RESULTS'")" \
    "malformed results by reason"
wait_until 5 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"
assert_eq completed "$(exec_field "$id" status)" "the bad status changed nothing"

# A completion without a running status (a handler that finished before it was sent) takes the
# worker's started_at, whatever its offset (the envelope's timestamp and started_at are read by
# the same parser); one naming an impossible instant is still applied, without it (a cast error
# would otherwise sink the whole batch).
direct=$(new_execution "$action")
offset=$(new_execution "$action")
bad_time=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $direct status)\" = scheduled ] && [ \"\$(exec_field $offset status)\" = scheduled ] && [ \"\$(exec_field $bad_time status)\" = scheduled ]"
completion() { # ID STARTED_AT
    publish "$TOPO_EXCHANGE" "execution.completed.$w" "$(envelope ExecutionCompleted "$(jq -cn \
        --argjson id "$1" --arg w "$w" --arg s "$2" \
        '{execution_id: $id, worker_id: $w, attempt: 1, status: "completed", result: {}, started_at: $s}')" 1)"
}
completion "$direct" "2026-01-02T03:04:05.678Z"
completion "$offset" "2026-01-02T05:04:05.678901+02:00"
completion "$bad_time" "2026-02-30T25:61:00Z"
wait_until 10 "[ \"\$(exec_field $direct status)\" = completed ] && [ \"\$(exec_field $offset status)\" = completed ] && [ \"\$(exec_field $bad_time status)\" = completed ]"
assert_eq "2026-01-02 03:04:05.678" "$(exec_field "$direct" "to_char(started_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')")" \
    "started_at from the completion"
assert_eq "2026-01-02 03:04:05.678901" "$(exec_field "$offset" "to_char(started_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')")" \
    "started_at with an offset, to the microsecond"
assert_eq "t" "$(exec_field "$bad_time" "started_at is null")" "impossible started_at ignored"

# A failure carries its error.
failed=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $failed status)\" = scheduled ]"
report "$w" "$failed" 1 running
report "$w" "$failed" 1 failed '{"exit_code": 3}' 'handler exited with status 3'
wait_until 10 "[ \"\$(exec_field $failed status)\" = failed ]"
assert_eq '{"exit_code": 3}|handler exited with status 3' "$(exec_field "$failed" "result, error")" "failed row"

# A completion without a status has failed when it carries an error; an error of null is none,
# as a null is the same as an absent field everywhere else.
nullerr=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $nullerr status)\" = scheduled ]"
publish "$TOPO_EXCHANGE" "execution.completed.$w" "$(envelope ExecutionCompleted "$(jq -cn \
    --argjson id "$nullerr" --arg w "$w" '{execution_id: $id, worker_id: $w, attempt: 1, result: {}, error: null}')" 1)"
wait_until 10 "[ \"\$(exec_field $nullerr status)\" = completed ]"
assert_eq "{}|" "$(exec_field "$nullerr" "result, error")" "completed row, no error"

# Attempt fence: the row is dispatched again (attempt 2); attempt 1's completion arrives late.
stale=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $stale status)\" = scheduled ]"
psql_q "update executions set status = 'requested' where id = $stale" >/dev/null # as after an unconfirmed publish
wait_until 10 "[ \"\$(exec_field $stale status),\$(exec_field $stale attempt)\" = scheduled,2 ]"
report "$w" "$stale" 1 completed '{"from": "attempt 1"}'
report "$w" "$stale" 2 running # a barrier: applied after the stale one
wait_until 10 "[ \"\$(exec_field $stale status)\" = running ]"
assert_eq "2||" "$(exec_field "$stale" "attempt, result, ended_at")" "attempt 1's completion changed nothing"

# Status fence: a late 'running' after the end, and a repeated completion, change nothing.
report "$w" "$stale" 2 completed '{"from": "attempt 2"}'
report "$w" "$stale" 2 running
report "$w" "$stale" 2 failed 'null' 'a second, contradicting completion'
report "$w" "$id" 1 failed 'null' 'late' # and one more for the first execution
barrier=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $barrier status)\" = scheduled ]"
report "$w" "$barrier" 1 running
wait_until 10 "[ \"\$(exec_field $barrier status)\" = running ]"
assert_eq 'completed|{"from": "attempt 2"}|' "$(exec_field "$stale" "status, result, error")" "after the late messages"
assert_eq 'completed|{"text": "déjà vu", "answer": 42}' "$(exec_field "$id" "status, result")" "first one untouched"

exec_stop "$EXEC_PID" ex
assert_eq 4 "$(stat_of "$EXEC_STATS" results_stale)" "stale results counted"
assert_eq 11 "$(stat_of "$EXEC_STATS" results_applied)" "results applied"

# Several messages for one execution in one batch apply in order: queue them while no executor
# runs, so the next one drains them together.
report "$w" "$barrier" 1 completed '{"batched": true}'
report "$w" "$barrier" 1 running
report "$w" "$barrier" 1 timeout 'null' 'too late'
wait_until 5 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 3 ]"
exec_start ex2
wait_until 10 "[ \"\$(exec_field $barrier status)\" = completed ]"
wait_until 5 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"
assert_eq 'completed|{"batched": true}|' "$(exec_field "$barrier" "status, result, error")" "batched messages in order"
exec_stop "$EXEC_PID" ex2
assert_eq "1 2" "$(stat_of "$EXEC_STATS" results_applied) $(stat_of "$EXEC_STATS" results_stale)"     "one applied, two stale in the batch"
pass
