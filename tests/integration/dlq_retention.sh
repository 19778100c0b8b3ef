#!/usr/bin/env bash
# Retention (docs/dead-letters.md, "Retention"): by default nothing is pruned; with the keys
# set, closed dead letters resolved long ago, terminal executions that ended long ago (with
# their history) and old history rows of terminal executions go, in bounded batches; pending
# records, unemitted ones, executions an open record names and unfinished executions stay.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
action=$(unique_name act)
q=$(unique_name q)
forget_executions "$action"
on_exit "psql_q \"delete from dead_letters where queue = '$q'\" >/dev/null"
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0 WARREN__STALENESS__INTERVAL_S=0
export WARREN__RETENTION__INTERVAL_S=1 WARREN__RETENTION__BATCH_SIZE=2
export WARREN__EVENTS__ENABLED=false # the unemitted record below stays unemitted

old_exec() { # STATUS: an execution of this test that ended (or changed) 40 days ago
    psql_q "with e as (insert into executions (action_ref, status, worker, attempt)
                values ('$action', '$1', 'w', 1) returning id)
            select id from e" | head -1
}
old_dl() { # EXECUTION_ID RESOLUTION [EMITTED]: a record received and resolved 40 days ago
    psql_q "insert into dead_letters (dedup_key, execution_id, reason, queue, headers, body)
            values ('$q/' || gen_random_uuid(), $1, 'expired', '$q', '{}', '\\x7b7d') returning id" |
        head -1 | { read -r id
        psql_q "update dead_letters set resolution = '$2', received_at = now() - interval '40 days',
                resolved_at = case when '$2' in ('pending', 'investigating') then null
                                   else now() - interval '40 days' end,
                emitted_at = ${3:-now()} where id = $id" >/dev/null
        echo "$id"; }
}
done_ids=(); for i in 1 2 3 4 5; do done_ids+=("$(old_exec completed)"); done
running=$(old_exec running)
named=$(old_exec failed)       # an open record names it
# shellcheck disable=SC2034 # rows that must be deleted; their ids are not needed
closed=$(old_dl "${done_ids[0]}" manually_resolved)
# shellcheck disable=SC2034 # as closed
closed2=$(old_dl "${done_ids[1]}" cancelled)
pending=$(old_dl "$named" pending)
unemitted=$(old_dl "${done_ids[2]}" permanent_failure null)
psql_q "update executions set ended_at = now() - interval '40 days' where action_ref = '$action'
        and ended_at is not null" >/dev/null
psql_q "update execution_events set at = now() - interval '40 days' where execution_id in
        (select id from executions where action_ref = '$action')" >/dev/null
count() { psql_q "select count(*) from $1"; }
left() { # what is left of this test's rows: dead letters, executions, history rows
    echo "$(count "dead_letters where queue = '$q'")|$(count "executions where action_ref = '$action'")|$(count "execution_events v join executions e on e.id = v.execution_id where e.action_ref = '$action'")"
}
before=$(left)
assert_eq "4|7|7" "$before" "the test's rows"

log "by default nothing is pruned"
exec_start ex
sleep 3
assert_eq "$before" "$(left)" "nothing pruned with the defaults"
exec_stop "$EXEC_PID" ex

log "with the keys set"
export WARREN__DEAD_LETTERS__RETENTION_DAYS=30 WARREN__EXECUTIONS__RETENTION_DAYS=30
export WARREN__EXECUTION_HISTORY__RETENTION_DAYS=30
exec_start ex2
wait_until 20 "[ \"\$(count \"dead_letters where queue = '$q'\")\" = 2 ]"
wait_until 20 "[ \"\$(count \"executions where action_ref = '$action'\")\" = 2 ]"
assert_eq "$pending,$unemitted" "$(psql_q "select string_agg(id::text, ',' order by id) from dead_letters where queue = '$q'")" \
    "pending and unemitted records kept"
assert_eq "$running,$named" "$(psql_q "select string_agg(id::text, ',' order by id) from executions where action_ref = '$action'")" \
    "the running execution and the one an open record names kept"
assert_eq 1 "$(count "execution_events where execution_id = $running")" "an unfinished execution's history kept"
assert_eq 0 "$(count "execution_events where execution_id = $named")" "old history of a terminal execution pruned"
wait_log ex2 '"msg":"retention: pruned","what":"dead letters","rows":"[0-9]+"' 5 # other tests' old rows may go too
exec_stop "$EXEC_PID" ex2
pass
