#!/usr/bin/env bash
# A completion applied while another transaction moves its row first (two executors: one applies
# the running report, the other the completion that followed it at once) is applied, not dropped
# as stale: PostgreSQL rechecks the guard on the new row version (running -> failed is legal).
# Found by tests/chaos/faults.sh: such rows stayed running until the monitor abandoned them.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w race
action=$(unique_name act)
forget_executions "$action"
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0 # nothing but the result may move the row
exec_start ex

id=$(psql_q "insert into executions (action_ref, pinned_worker, status, worker, attempt, scheduled_at)
    values ('$action', '$w', 'scheduled', '$w', 1, now()) returning id")

# The other executor: its running report holds the row, uncommitted, for 3 s.
marker="race-$id-$$"
(
    trap - EXIT ERR TERM INT
    psql_q "begin; update executions set status = 'running', started_at = now() where id = $id;
            select pg_sleep(3) as \"$marker\"; commit" >/dev/null
) &
holder=$!
wait_until 5 "[ \"\$(psql_q \"select count(*) from pg_stat_activity
    where query like '%$marker%' and state = 'active' and pid <> pg_backend_pid()\")\" = 1 ]"

report "$w" "$id" 1 failed null "handler exited with code 3"
# The executor's UPDATE waits for the row lock behind the running report.
wait_until 5 "[ \"\$(psql_q \"select count(*) from pg_stat_activity
    where wait_event_type = 'Lock' and query like 'UPDATE executions e SET status = u.status%'\")\" = 1 ]"
wait "$holder" || fail "the transaction holding the row failed"

wait_until 10 "[ \"\$(exec_field $id status)\" = failed ]"
assert_eq "failed|handler exited with code 3|1" "$(exec_field "$id" "status, error, attempt")" "row"
assert_eq "scheduled>running running>failed" \
    "$(psql_q "select string_agg(from_status || '>' || to_status, ' ' order by seq)
               from execution_history where execution_id = $id and from_status is not null")" \
    "history"
exec_stop "$EXEC_PID" ex
assert_eq 0 "$(stat_of "$EXEC_STATS" results_stale)" "nothing counted stale"
assert_eq 1 "$(stat_of "$EXEC_STATS" results_applied)" "the completion applied"
pass
