#!/usr/bin/env bash
# A delivery the executor cannot hold (out of memory, injected with WARREN_FAULT=hold_oom_once:
# each consumer's first delivery) goes back to its queue at once (nack, requeue) and is handled
# when it comes again, rather than being acked unstored by the next batch's ack multiple.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w oom
action=$(unique_name act)
forget_executions "$action"
WARREN_FAULT=hold_oom_once exec_start ex
heartbeat "$w" "$action" 10 60 # the heartbeats consumer's first delivery: returned, then held
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"
first=$(new_execution "$action")
second=$(new_execution "$action")
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($first, $second) and status = 'scheduled'\")\" = 2 ]"
# The results consumer's first delivery is returned; the second is acked after its batch.
report "$w" "$first" 1 running
report "$w" "$second" 1 running
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($first, $second) and status = 'running'\")\" = 2 ]"
wait_until 5 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"
assert_eq 2 "$(grep -c 'out of memory holding a delivery; returned to the queue' "$(bg_log ex)")" \
    "one per consumer that got a delivery"
exec_stop "$EXEC_PID" ex
pass
