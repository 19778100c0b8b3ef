#!/usr/bin/env bash
# Cancel through the API, with a fake worker: requested -> cancelled at once (cancelled_by the
# key's name); running -> canceling and an ExecutionCancelRequested control message on
# execution.cancel.worker.{id} with the agreed properties; the worker's cancelled report ends it,
# and a report after it stays in the history only; a terminal execution is 409; a canceling
# execution whose control message nobody received is settled as cancelled once its worker is
# gone, or restarted (a new incarnation); `warren cancel` on the database URL records cli:<user>.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
new_worker w cw
action=$(unique_name act)
forget_executions "$action"
export WARREN__EXECUTOR__HEARTBEAT_STALE_FACTOR=2
api_start ex

log "requested: cancelled at once, by the key's name; again: 409"
id=$(new_execution "$action")
expect 200 POST "/api/v1/executions/$id/cancel"
assert_eq "cancelled|ops" "$(jq -r '"\(.status)|\(.cancelled_by)"' <<<"$CALL_BODY")" "answer"
assert_eq "cancelled|ops|t" "$(exec_field "$id" "status, cancelled_by, ended_at is not null")" "row"
assert_eq "requested>cancelled" \
    "$(psql_q "select string_agg(coalesce(from_status, '') || '>' || to_status, ',' order by seq)
               from execution_history where execution_id = $id and from_status is not null")" "history"
expect 409 POST "/api/v1/executions/$id/cancel"
expect 404 POST /api/v1/executions/999999999999/cancel
expect 400 POST "/api/v1/executions/$id/cancel" '{"reason": 1}'

log "running: canceling, and the worker gets the control message"
ctl=$(unique_name ctl)
declare_queue "$ctl"
mgmt_post "bindings/%2F/e/$(urlencode "$TOPO_EXCHANGE")/q/$(urlencode "$ctl")" \
    "{\"routing_key\":\"execution.cancel.worker.$w\"}" >/dev/null
heartbeat "$w" "other.$action" 4 1
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"
rid=$(psql_q "insert into executions (action_ref, status, worker, attempt, started_at)
              values ('$action', 'running', '$w', 3, now()) returning id")
expect 202 POST "/api/v1/executions/$rid/cancel"
assert_eq canceling "$(jq -r .status <<<"$CALL_BODY")" "answer"
# At least one: the executor sends the cancel again after a monitor round (1 s here) while the
# worker has not answered, and a slow rabbitmqctl can miss the moment there is exactly one.
wait_until 5 "[ \"\$(queue_messages '$ctl')\" -ge 1 ] 2>/dev/null"
msg=$(queue_get "$ctl" 1)
assert_eq "execution.cancel.worker.$w|ExecutionCancelRequested|$rid|$rid|2|warren-executor" \
    "$(jq -r '.[0] | "\(.routing_key)|\(.properties.type)|\(.properties.correlation_id)|\(.properties.headers.execution_id)|\(.properties.delivery_mode)|\(.properties.app_id)"' <<<"$msg")" \
    "control message properties"
assert_eq "ExecutionCancelRequested|{\"attempt\":3,\"execution_id\":$rid,\"requested_by\":\"ops\",\"worker_id\":\"$w\"}" \
    "$(jq -r '.[0].payload | fromjson | "\(.message_type)|\(.payload | tojson)"' <<<"$msg" |
        jq -Rr 'split("|") | "\(.[0])|\(.[1] | fromjson | to_entries | sort_by(.key) | from_entries | tojson)"')" \
    "control message payload"
expect 202 POST "/api/v1/executions/$rid/cancel" # already on its way

log "the worker's cancelled report ends it; a late completion stays in the history only"
report "$w" "$rid" 3 cancelled null "Cancelled by request"
wait_until 10 "[ \"\$(exec_field $rid status)\" = cancelled ]"
report "$w" "$rid" 3 completed '{"late": true}'
wait_until 10 "[ \"\$(psql_q \"select count(*) from execution_history where execution_id = $rid and not applied\")\" = 1 ]"
assert_eq "cancelled|completed|reported after the cancel; not applied" \
    "$(psql_q "select from_status, to_status, note from execution_history where execution_id = $rid and not applied")" \
    "late report kept"
assert_eq "cancelled|" "$(exec_field "$rid" "status, result")" "the row did not change"

log "terminal: 409"
done_id=$(psql_q "insert into executions (action_ref, status, ended_at) values ('$action', 'completed', now()) returning id")
expect 409 POST "/api/v1/executions/$done_id/cancel"
assert_contains "$(jq -r .detail <<<"$CALL_BODY")" "completed"

log "nobody listening: stays canceling, then cancelled once the worker is gone"
g=$(unique_name gone)
on_exit psql_q "delete from workers where id = '$g'"
psql_q "insert into workers (id, capabilities, capacity, heartbeat_interval_s) values ('$g', '{}', 1, 1)" >/dev/null
gid=$(psql_q "insert into executions (action_ref, status, worker, attempt, started_at)
              values ('$action', 'running', '$g', 1, now()) returning id")
expect 202 POST "/api/v1/executions/$gid/cancel"
assert_eq canceling "$(exec_field "$gid" status)" "returned control message: still canceling"
wait_until 15 "[ \"\$(exec_field $gid status)\" = cancelled ]"
assert_eq "Cancelled; worker $g was gone, its process could not be told" "$(exec_field "$gid" error)" "error"

log "canceling on a worker that restarted: cancelled once the new process heartbeats"
r=$(unique_name rst)
on_exit psql_q "delete from workers where id = '$r'"
incarnation() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
old=$(incarnation)
HEARTBEAT_EXTRA=$(jq -cn --arg i "$old" '{incarnation: $i}') heartbeat "$r" "other.$action" 4 60
wait_until 10 "[ \"\$(psql_q \"select incarnation from workers where id = '$r'\")\" = $old ]"
rsid=$(psql_q "insert into executions (action_ref, status, worker, attempt, started_at, incarnation,
                 reported_at) values ('$action', 'running', '$r', 1, now() - interval '5 s', '$old',
                 now() - interval '5 s') returning id")
expect 202 POST "/api/v1/executions/$rsid/cancel"
sleep 2 # two monitor rounds: its worker is live, so it stays canceling
assert_eq canceling "$(exec_field "$rsid" status)" "a live worker's canceling row waits"
sleep 1.1 # heartbeats carry whole seconds
HEARTBEAT_EXTRA=$(jq -cn --arg i "$(incarnation)" '{incarnation: $i}') heartbeat "$r" "other.$action" 4 60
wait_until 10 "[ \"\$(exec_field $rsid status)\" = cancelled ]"
assert_eq "Cancelled; worker $r was gone, its process could not be told|worker_restarted" \
    "$(psql_q "select e.error, d.reason from executions e join dead_letters d on d.execution_id = e.id
               where e.id = $rsid")" "error and dead letter"

log "warren cancel on the database URL: cancelled_by cli:<user>"
cid=$(new_execution "$action")
out=$("$WARREN_BIN" cancel "$cid")
assert_eq "execution $cid: cancelled" "$out" "cancel output"
assert_eq "cli:$(id -un)" "$(exec_field "$cid" cancelled_by)" "cancelled_by"
rc=0
"$WARREN_BIN" cancel "$cid" 2>"$TEST_TMP/err" || rc=$?
assert_eq 1 "$rc" "cancel of a cancelled execution"
assert_contains "$(cat "$TEST_TMP/err")" "it has ended"

expect 200 GET /metrics '' -
assert_contains "$CALL_BODY" 'warren_cancels_total 4'
exec_stop "$EXEC_PID" ex
pass
