#!/usr/bin/env bash
# Queues the executor consumes are declared again when it resubscribes, as a worker does: a
# results queue and a dead-letter queue deleted under it come back (with their bindings) and are
# consumed again, instead of a 404 retried forever.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w redecl
action=$(unique_name act)
forget_executions "$action"
exec_start ex
heartbeat_seen "$w" "$action"
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"

# shellcheck disable=SC2317 # called in wait_until's condition
consumers() { rmq list_queues name consumers | awk -v q="$1" '$1 == q {print $2}'; }
mgmt_delete "queues/%2F/$(urlencode "$TOPO_RESULTS")" >/dev/null
mgmt_delete "queues/%2F/$(urlencode "$TOPO_DLQ")" >/dev/null
wait_log ex '"consumer lost; resubscribing".*"status":"cancelled"' 10
wait_until 15 "[ \"\$(consumers '$TOPO_RESULTS')\" = 1 ] && [ \"\$(consumers '$TOPO_DLQ')\" = 1 ]"
assert_eq "execution.completed.#,execution.status.#" "$(binding_keys "$TOPO_EXCHANGE" "$TOPO_RESULTS")" \
    "the results queue's bindings"
assert_eq 1 "$(mgmt_get "bindings/%2F/e/$TOPO_DLX/q/$TOPO_DLQ" | jq length)" "the dead-letter queue's binding"

report "$w" "$id" 1 completed '{"after": "redeclare"}'
wait_until 10 "[ \"\$(exec_field $id status)\" = completed ]"
exec_stop "$EXEC_PID" ex
pass
