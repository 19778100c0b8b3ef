#!/usr/bin/env bash
# database.prepared_statements (default true): the executor prepares each statement once per
# connection and runs it by name. A schema change that alters a prepared statement's result type
# (PostgreSQL refuses it: "cached plan must not change result type") costs one failed tick: the
# executor forgets what it prepared, prepares again and goes on. With the key false every
# statement runs unnamed, as before.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w prep
action=$(unique_name act)
forget_executions "$action"
exec_start ex
heartbeat_seen "$w" "$action" 10 60
id1=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id1 status)\" = scheduled ]"

log "a prepared statement's result type changes under the running executor"
on_exit "psql_q 'alter table workers alter column capacity type integer' >/dev/null 2>&1"
psql_q "alter table workers alter column capacity type bigint" >/dev/null
id2=$(new_execution "$action")
wait_until 15 "[ \"\$(exec_field $id2 status)\" = scheduled ]"
wait_log ex 'cached plan must not change result type' 5
assert_eq "$w|1" "$(exec_field "$id2" "worker, attempt")" "scheduled once, after preparing again"
psql_q "alter table workers alter column capacity type integer" >/dev/null
exec_stop "$EXEC_PID" ex
assert_eq 2 "$(stat_of "$EXEC_STATS" dispatched)" "both dispatched"

log "database.prepared_statements = false"
export WARREN__DATABASE__PREPARED_STATEMENTS=false
exec_start ex2
heartbeat_seen "$w" "$action" 10 60
id3=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id3 status)\" = scheduled ]"
assert_not_contains "$(cat "$(bg_log ex2)")" 'cached plan' "nothing prepared, nothing to go stale"
exec_stop "$EXEC_PID" ex2
assert_eq 3 "$(queue_messages "worker.$w.executions")" "three dispatches wait in the worker's queue"
pass
