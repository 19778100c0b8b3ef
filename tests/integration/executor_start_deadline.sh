#!/usr/bin/env bash
# Every dispatch carries a start deadline (scheduled_at + executor.scheduled_timeout_s); a worker
# that held a dispatch past it rejects it instead of starting it, and the dead-letter handler
# fails the execution saying so.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w held
action=$(unique_name act)
forget_executions "$action"
# The monitor is off, so only the worker's rejection can fail it.
export WARREN__EXECUTOR__SCHEDULED_TIMEOUT_S=2 WARREN__EXECUTOR__MONITOR_INTERVAL_S=0
# Failed, not redispatched (never started, it would be by default: docs/retries.md).
export WARREN__EXECUTOR__MAX_REDISPATCHES=0
exec_start ex
heartbeat_seen "$w" "$action"

id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
wait_until 10 "[ \"\$(queue_messages 'worker.$w.executions')\" = 1 ]"
deadline=$(queue_get "worker.$w.executions" 1 | jq -r '.[0].payload | fromjson | .payload.start_deadline')
[[ "$deadline" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$ ]] ||
    fail "start_deadline '$deadline' is not RFC 3339 UTC with milliseconds"
assert_eq t "$(psql_q "select abs(extract(epoch from '$deadline'::timestamptz - (scheduled_at + interval '2 seconds'))) < 1
    from executions where id = $id")" "start_deadline = scheduled_at + scheduled_timeout_s"

# The worker held it past the deadline, then rejects it (requeue=false): dead-lettered.
sleep 2.5
mgmt_post "queues/%2F/$(urlencode "worker.$w.executions")/get" \
    '{"count":1,"ackmode":"reject_requeue_false","encoding":"auto"}' >/dev/null
wait_until 10 "[ \"\$(exec_field $id status)\" = failed ]"
assert_eq "Start deadline passed before a worker could start it" "$(exec_field "$id" error)" "why"
assert_contains "$(exec_field "$id" "result->>'message'")" "held the dispatch past its start deadline ($deadline)"
assert_eq rejected "$(psql_q "select reason from dead_letters where execution_id = $id")" "its dead letter"
exec_stop "$EXEC_PID" ex
pass
