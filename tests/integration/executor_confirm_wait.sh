#!/usr/bin/env bash
# While a dispatch batch waits for the broker's confirms (the scheduler's fiber), the results
# that arrived meanwhile are applied on their own lane. 300
# submissions at once pinned to one live worker all complete exactly once and every dispatch is
# confirmed; then 40 one at a time; the executor counted results read during confirm waits
# (confirm_wait_results).
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__LOG__LEVEL=info

exec_start ex
start_live_worker w cwait
ids=$(psql_q "insert into executions (action_ref, pinned_worker)
    select 'core.noop', '$w' from generate_series(1, 300) returning id" | paste -sd, -)
wait_until 60 "[ \"\$(psql_q \"select count(*) from executions where id in ($ids)
    and status = 'completed'\")\" = 300 ]"
assert_eq "300|300" "$(psql_q "select count(*), count(distinct execution_id) from execution_history
    where execution_id in ($ids) and to_status = 'completed'")" "each completed once"
# One at a time, as at light load: the worker's completion usually arrives before the confirm.
for i in $(seq 40); do
    id=$(new_execution core.noop "$w")
    wait_until 10 "[ \"\$(exec_field $id status)\" = completed ]"
done
exec_stop "$EXEC_PID" ex
[ "$(stat_of "$EXEC_STATS" dispatched)" -ge 340 ] || fail "not every dispatch was confirmed: $EXEC_STATS"
waits=$(stat_of "$EXEC_STATS" confirm_wait_results)
[ "$waits" -gt 0 ] || fail "no results were applied during a confirm wait (confirm_wait_results=$waits)"
log "confirm_wait_results=$waits over $(stat_of "$EXEC_STATS" sched_ticks) ticks"
pass
