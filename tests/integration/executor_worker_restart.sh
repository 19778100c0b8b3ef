#!/usr/bin/env bash
# A worker restarted under the same name (a StatefulSet pod OOM-killed and back within seconds)
# heartbeats online at once: the executions its older process was running are abandoned as soon
# as the newer incarnation is heard (worker_restarted), also those an older worker version
# reported without an incarnation; what the new process runs is left alone. And a backstop: a
# running execution past its timeout plus executor.running_grace_s with no result is abandoned
# (running_timeout); its late completion is still accepted.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w sts
action=$(unique_name act)
forget_executions "$action"
export WARREN__EXECUTOR__RUNNING_GRACE_S=1
exec_start ex

incarnation() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
old=$(incarnation)
new=$(incarnation)
running_on() { # INCARNATION|none [TIMEOUT_S]: a new execution the worker reports running
    local id extra='{}'
    [ "$1" = none ] || extra=$(jq -cn --arg i "$1" '{incarnation: $i}')
    [ -z "${2:-}" ] || extra=$(jq -cn --argjson x "$extra" --argjson t "$2" '$x + {timeout_s: $t}')
    id=$(new_execution "$action")
    wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
    REPORT_EXTRA=$extra report "$w" "$id" 1 running
    wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"
    echo "$id"
}

# An older worker version (no incarnation) runs one: its heartbeats abandon nothing.
heartbeat_seen "$w" "$action"
legacy=$(running_on none)
sleep 1.1 # heartbeats and reports carry whole seconds
heartbeat "$w" "$action" 10 60
sleep 2 # two monitor passes
assert_eq running "$(exec_field "$legacy" status)" "an unknown incarnation abandons nothing"

# It is replaced by a newer version, whose process has incarnation $old: what the older process
# was running is gone with it.
HEARTBEAT_EXTRA=$(jq -cn --arg i "$old" '{incarnation: $i}') heartbeat "$w" "$action" 10 60
wait_until 10 "[ \"\$(exec_field $legacy status)\" = abandoned ]"
assert_eq "Worker $w restarted (incarnation unknown replaced by $old)" "$(exec_field "$legacy" error)" \
    "why, older worker version"
assert_eq "$old" "$(psql_q "select incarnation from workers where id = '$w'")" "the newest incarnation"
ids=()
for _ in 1 2 3 4; do ids+=("$(running_on "$old")"); done
list=$(IFS=,; echo "${ids[*]}")
assert_eq "4|$old" "$(psql_q "select count(*), min(incarnation) from executions where id in ($list)")" \
    "the incarnation is recorded"

# The pod comes back under the same name: a new incarnation, started later.
sleep 1.1
HEARTBEAT_EXTRA=$(jq -cn --arg i "$new" '{incarnation: $i}') heartbeat "$w" "$action" 10 60
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($list) and status = 'abandoned'\")\" = 4 ]"
assert_eq "Worker $w restarted (incarnation $old replaced by $new)" "$(exec_field "${ids[0]}" error)" \
    "why"
assert_eq "5|worker_restarted" "$(psql_q "select count(*), min(reason) from dead_letters
    where execution_id in ($list, $legacy)")" "dead letters"
# The new process's own work stays.
fresh=$(running_on "$new")
sleep 2 # two monitor passes
assert_eq running "$(exec_field "$fresh" status)" "the new incarnation's execution is left alone"

# Backstop: the worker reported a 1 s timeout and then nothing; 1 s of grace later, abandoned.
late=$(running_on "$new" 1)
wait_until 10 "[ \"\$(exec_field $late status)\" = abandoned ]"
assert_contains "$(exec_field "$late" error)" "No result within the timeout: running since" "why"
assert_eq "1|running_timeout" "$(psql_q "select count(*), min(reason) from dead_letters where execution_id = $late")" \
    "its dead letter"
report "$w" "$late" 1 completed '{"late": true}'
wait_until 10 "[ \"\$(exec_field $late status)\" = completed ]"
assert_eq running "$(exec_field "$fresh" status)" "no reported timeout: the default (3600 s) applies"

# Reports and heartbeats travel through different queues: a new process's running report may be
# applied before its first heartbeat. Sent after the newest known process started, it is left
# alone; once that heartbeat is heard, the process before it is the old one.
third=$(incarnation)
sleep 1.1
early=$(running_on "$third")
sleep 2 # two monitor passes
assert_eq running "$(exec_field "$early" status)" "reported before its process's first heartbeat: left alone"
HEARTBEAT_EXTRA=$(jq -cn --arg i "$third" '{incarnation: $i}') heartbeat "$w" "$action" 10 60
wait_until 10 "[ \"\$(exec_field $fresh status)\" = abandoned ]"
assert_eq running "$(exec_field "$early" status)" "the newest process's execution stays"

exec_stop "$EXEC_PID" ex
assert_eq "6 1" "$(stat_of "$EXEC_STATS" abandoned_restarted) $(stat_of "$EXEC_STATS" abandoned_timeout)" \
    "counters"
pass
