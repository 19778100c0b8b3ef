#!/usr/bin/env bash
# Two executors schedule at once: 200 requested executions, one fake worker; each execution is
# dispatched exactly once (200 messages in the worker queue, one per execution, all attempt 1).
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w busy
action=$(unique_name act)
forget_executions "$action"
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare the worker queue ($RUN_ERR)"
export WARREN__EXECUTOR__BATCH_SIZE=25 WARREN__LOG__LEVEL=info
exec_start ex1
pid1=$EXEC_PID
exec_start ex2
pid2=$EXEC_PID
heartbeat "$w" "$action" 1000 60
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"

psql_q "insert into executions (action_ref, params)
        select '$action', jsonb_build_object('n', n) from generate_series(1, 200) n" >/dev/null
queue="worker.$w.executions"
wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where action_ref = '$action' and status = 'scheduled'\")\" = 200 ]"
wait_until 10 "[ \"\$(queue_messages '$queue')\" = 200 ]"
assert_eq "200|1|1|$w" "$(psql_q "select count(*), min(attempt), max(attempt), string_agg(distinct worker, ',')
    from executions where action_ref = '$action'")" "rows: each scheduled once"
assert_eq "200 200" "$(queue_get "$queue" 200 | jq -r '[.[].payload | fromjson | .payload.execution_id] | "\(length) \(unique | length)"')" \
    "one dispatch per execution"
assert_eq 200 "$(psql_q "select count(*) from execution_history e join executions x on x.id = e.execution_id
    where x.action_ref = '$action' and e.to_status = 'scheduled'")" "one scheduled event each"

exec_stop "$pid1" ex1
d1=$(stat_of "$EXEC_STATS" dispatched)
exec_stop "$pid2" ex2
d2=$(stat_of "$EXEC_STATS" dispatched)
log "executor 1 dispatched $d1, executor 2 dispatched $d2"
assert_eq 200 "$((d1 + d2))" "dispatch counters add up"
pass
