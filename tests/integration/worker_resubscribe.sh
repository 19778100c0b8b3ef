#!/usr/bin/env bash
# A worker keeps consuming whatever happens to its queue or broker: when its queue is deleted
# (basic.cancel) it declares it again and consumes again; when the broker restarts it keeps its
# handler running, reconnects with backoff, declares, consumes, announces itself again and
# publishes the completion it held; each time a dispatch sent afterwards is processed. Its
# control queue (cancel requests) is declared and consumed again after the restart too. Restarts
# the stack's RabbitMQ node: must not run in parallel with other tests.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
on_exit 'stack rabbit-start >/dev/null 2>&1 || true'

new_worker w resub
wq="worker.$w.executions"
start_worker worker "$w"
pid=$BG_PID
id=$(exec_id)

# consumed_again N: the worker has started consuming N times.
consumed_again() {
    # shellcheck disable=SC2016 # the text is evaluated later, by try_until
    try_until 30 '[ "$(grep -c "\"msg\":\"consuming dispatches\"" "'"$(bg_log worker)"'")" -ge '"$1"' ]' ||
        fail "the worker did not consume again ($1)"
}

# 1. The queue is deleted under the worker.
mgmt_delete "queues/%2F/$(urlencode "$wq")" >/dev/null
wait_log worker '"msg":"consumer lost; subscribing again".*"reason":"cancelled"' 10
consumed_again 2
assert_eq "execution.dispatch.worker.$w" "$(binding_keys "$TOPO_EXCHANGE" "$wq")" "queue and binding are back"
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.echo '{"after":"delete"}')"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" 15 | jq -c .body.payload)
assert_eq 'completed {"after":"delete"}' "$(jq -rc '"\(.status) \(.result | tojson)"' <<<"$p")" "processed after the queue came back"

# 2. The broker restarts while a handler runs: the handler goes on, and its completion, which
# cannot be published while the broker is away, is retried and arrives after the restart.
long=$((id + 2))
publish_dispatch "$w" "$(dispatch_body "$long" "$w" core.sleep '{"seconds": 4}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$long")" >/dev/null
stack rabbit-stop >/dev/null
wait_log worker '"msg":"consumer lost; subscribing again".*"reason":"connection"' 20
stack rabbit-start >/dev/null
restarted=$(date -u +%Y-%m-%dT%H:%M:%S)
consumed_again 3
kill -0 "$pid" || fail "the worker died with the broker"
cq="worker.$w.control"
# shellcheck disable=SC2016 # the text is evaluated later, by try_until
try_until 30 '[ "$(grep -c "\"msg\":\"consuming control messages\"" "'"$(bg_log worker)"'")" -ge 2 ]' ||
    fail "the worker did not consume its control queue again"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 20 '[ "$(queue_counts "'"$cq"'")" = "0 0 1" ]'
assert_eq "execution.cancel.worker.$w" "$(binding_keys "$TOPO_EXCHANGE" "$cq")" "control binding is back"

id=$((id + 1))
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.echo '{"after":"restart"}')"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" 30 | jq -c .body.payload)
assert_eq 'completed {"after":"restart"}' "$(jq -rc '"\(.status) \(.result | tojson)"' <<<"$p")" "processed after the restart"
wait_msg "$TOPO_HEARTBEATS" "$(is_heartbeat "$w") and .body.timestamp > \"$restarted\"" 15 >/dev/null
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$long")" 30 | jq -c .body.payload)
assert_eq 'completed {"slept":4}' "$(jq -rc '"\(.status) \(.result | tojson)"' <<<"$p")" "ran through the restart"
assert_contains "$(cat "$(bg_log worker)")" '"msg":"report confirmed after retrying"'

stop_worker worker "$pid"
assert_contains "$WORKER_STATS" '"resubscribes":"2"'
assert_contains "$WORKER_STATS" '"control_resubscribes":"1"'
pass
