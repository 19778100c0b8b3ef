#!/usr/bin/env bash
# The timeout monitor: a dispatch no worker starts within executor.scheduled_timeout_s fails; a
# running execution whose worker stops heart-beating (or says it goes offline) is abandoned.
# Each leaves a dead_letters row with the execution row as body and snapshot.
# shellcheck disable=SC2154 # slow, dies, bye are set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker slow slow  # live, but never starts anything
new_worker dies dies  # starts one, then goes silent
new_worker bye bye    # starts one, then says it goes offline
action=$(unique_name act)
forget_executions "$action"
for w in "$slow" "$dies" "$bye"; do
    run_warren "declare-$w" topology declare --worker "$w"
    assert_eq 0 "$RUN_RC" "declare $w ($RUN_ERR)"
done
export WARREN__EXECUTOR__SCHEDULED_TIMEOUT_S=2 WARREN__EXECUTOR__HEARTBEAT_STALE_FACTOR=2
# The path to failed: without this the dispatch nobody started is redispatched first
# (docs/retries.md, "Redispatch"; tests/integration/executor_redispatch.sh).
export WARREN__EXECUTOR__MAX_REDISPATCHES=0
exec_start ex

heartbeat "$slow" "$action.slow" 5 60
heartbeat "$bye" "$action.bye" 5 60
heartbeat "$dies" "$action.dies" 5 1 # live for 2 s unless it heartbeats again
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id in ('$slow', '$dies', '$bye')\")\" = 3 ]"
never=$(new_execution "$action.slow")
lost=$(new_execution "$action.dies")
left=$(new_execution "$action.bye")
wait_until 5 "[ \"\$(psql_q \"select count(*) from executions where id in ($lost, $left) and status = 'scheduled'\")\" = 2 ]"
report "$dies" "$lost" 1 running
report "$bye" "$left" 1 running
wait_until 5 "[ \"\$(psql_q \"select count(*) from executions where id in ($lost, $left) and status = 'running'\")\" = 2 ]"
heartbeat "$bye" "$action.bye" 5 60 offline

wait_until 10 "[ \"\$(exec_field $never status)\" = failed ]"
assert_eq "Scheduled timeout: no worker started it|$slow|1|2" \
    "$(exec_field "$never" "error, result->>'worker', result->>'attempt', result->>'scheduled_timeout_s'")" "scheduled timeout"
wait_until 10 "[ \"\$(exec_field $lost status),\$(exec_field $left status)\" = abandoned,abandoned ]"
assert_contains "$(exec_field "$lost" error)" "Worker heartbeat stale: $dies last seen" "stale worker"
assert_eq "Worker $bye went offline while it ran|offline" "$(exec_field "$left" "error, result->>'worker_status'")" \
    "offline worker"

rows=$(psql_q "select string_agg(execution_id || ':' || reason || ':' || (snapshot->>'status') || ':' ||
    (convert_from(body, 'UTF8')::jsonb->>'id') || ':' || queue, ',' order by execution_id)
    from dead_letters where execution_id in ($never, $lost, $left)")
assert_eq "$never:scheduled_timeout:scheduled:$never:worker.$slow.executions,$lost:worker_stale:running:$lost:worker.$dies.executions,$left:worker_stale:running:$left:worker.$bye.executions" \
    "$rows" "dead letters of the monitor"

# The worker was only out of sight: its completion of the same attempt is accepted late, and the
# history says so; a completion of another attempt still changes nothing.
report "$dies" "$lost" 1 completed '{"late": true}'
report "$bye" "$left" 2 completed '{"other": "attempt"}'
wait_until 10 "[ \"\$(exec_field $lost status)\" = completed ]"
assert_eq '{"late": true}|' "$(exec_field "$lost" "result, error")" "late completion applied"
assert_eq "running>abandoned:,abandoned>completed:late completion" \
    "$(psql_q "select string_agg(from_status || '>' || to_status || ':' || coalesce(note, ''), ',' order by seq)
               from execution_history where execution_id = $lost and from_status in ('running', 'abandoned')")" \
    "history of the late completion"
assert_contains "$("$WARREN_BIN" get "$lost")" "late completion" "warren get shows the note"
assert_eq abandoned "$(exec_field "$left" status)" "another attempt's completion changed nothing"

exec_stop "$EXEC_PID" ex
assert_eq "1 2" "$(stat_of "$EXEC_STATS" monitor_failed) $(stat_of "$EXEC_STATS" monitor_abandoned)" "monitor counters"
pass
