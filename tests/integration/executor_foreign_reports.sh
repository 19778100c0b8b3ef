#!/usr/bin/env bash
# Reports of dispatches the executor never sent leave a record: a result for an execution that
# does not exist (execution_missing), a report of an attempt never dispatched (not_dispatched),
# and a heartbeat of a process older than the registered one (superseded_incarnation), which
# also leaves the worker's row alone. None changes an execution; the results queue drains.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w foreign
action=$(unique_name act)
forget_executions "$action"
exec_start ex
heartbeat_seen "$w" "$action"

# The attack: a completion and a running report, published straight to the results exchange,
# for an execution id nobody ever created.
ghost=$((8000000000000 + RANDOM * 32768 + RANDOM))
assert_eq 0 "$(psql_q "select count(*) from executions where id = $ghost")" "the id is free"
report "$w" "$ghost" 1 running
report "$w" "$ghost" 1 completed '{"forged": true}'
wait_until 10 "[ \"\$(psql_q \"select coalesce(sum(occurrences), 0) from dead_letters where execution_id = $ghost\")\" = 2 ]"
assert_eq "execution_missing|$TOPO_RESULTS|poison_message|pending" \
    "$(psql_q "select reason, queue, investigation_reason, resolution from dead_letters
               where execution_id = $ghost and resolution = 'pending'")" \
    "one open record (the second report folded into it, or kept closed beside it)"
assert_contains "$(psql_q "select error from dead_letters where execution_id = $ghost order by id limit 1")" \
    "does not exist" "the record says why"
assert_contains "$(psql_q "select body_text from dead_letters where execution_id = $ghost order by id limit 1")" \
    '"execution_id":'"$ghost" "the raw message is kept"

# A report of attempt 3 of an execution dispatched once: nobody was sent attempt 3.
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
report "$w" "$id" 3 completed '{"forged": true}'
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $id\")\" = 1 ]"
assert_eq "not_dispatched|poison_message|pending" \
    "$(psql_q "select reason, investigation_reason, resolution from dead_letters where execution_id = $id")" \
    "a report of an attempt never dispatched"
assert_eq "scheduled|1|" "$(exec_field "$id" "status, attempt, result")" "the execution is untouched"
# The real worker's reports still apply.
report "$w" "$id" 1 running
report "$w" "$id" 1 completed '{"real": true}'
wait_until 10 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq '{"real": true}' "$(exec_field "$id" result)" "the real completion"

# A heartbeat of a process that started before the registered one: recorded, not applied.
inc() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
new=$(inc)
old=$(inc)
HEARTBEAT_EXTRA=$(jq -cn --arg i "$new" '{incarnation: $i}') heartbeat "$w" "$action" 10 60
wait_until 10 "[ \"\$(psql_q \"select incarnation from workers where id = '$w'\")\" = $new ]"
HEARTBEAT_EXTRA=$(jq -cn --arg i "$old" '{incarnation: $i, started_at: "2020-01-01T00:00:00Z"}') \
    heartbeat "$w" "$action" 10 60 offline
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where reason = 'superseded_incarnation' and routing_key = 'worker.heartbeat.$w'\")\" = 1 ]"
assert_eq "$new|online|$TOPO_HEARTBEATS|pending" \
    "$(psql_q "select w.incarnation, w.status, d.queue, d.resolution from workers w, dead_letters d
               where w.id = '$w' and d.reason = 'superseded_incarnation'
               and d.routing_key = 'worker.heartbeat.$w'")" \
    "the worker's row stays the registered process's"
wait_log ex "heartbeat of a replaced worker process" 5
wait_log ex "report of a dispatch the executor never sent" 5

wait_until 5 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"
pass
