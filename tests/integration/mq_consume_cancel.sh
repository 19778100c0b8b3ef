#!/usr/bin/env bash
# MessageClient consuming: an idle consumer stays connected on heartbeats serviced while it waits;
# deleting its queue surfaces as MQ_ERR_CANCELLED (basic.cancel), and resubscribing to the
# deleted queue is refused by the broker (404) without losing the connection.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

Q=$(unique_name cancel)
mgmt_put "queues/%2F/$(urlencode "$Q")" '{"durable":true,"auto_delete":false,"arguments":{}}' >/dev/null
on_exit "mgmt_delete 'queues/%2F/$(urlencode "$Q")' >/dev/null 2>&1 || true"

# Heartbeat 1 s: without heartbeats sent while waiting the broker drops the connection after ~2 s.
bg_start consumer "$PROBE" consume -H 1 -q "$Q" -n 2 -t 20000
CONSUMER=$BG_PID
wait_log consumer 'consuming queue=' 10
sleep 4 # proves a negative (the idle connection is not dropped): a fixed wait stays
"$PROBE" publish -n 1 -I "$Q-m" ":$Q" >/dev/null 2>&1 || fail "publish failed"
wait_log consumer "delivery 0 message_id=$Q-m0" 10

mgmt_delete "queues/%2F/$(urlencode "$Q")" >/dev/null
wait_log consumer 'consume status=cancelled' 10
wait_log consumer 'resubscribe status=' 10
rc=0
bg_stop "$CONSUMER" || rc=$?
assert_eq 1 "$rc" "consumer exit status (fewer deliveries than asked)"
log=$(cat "$(bg_log consumer)")
assert_contains "$log" "consumer cancelled by broker"
assert_contains "$log" "resubscribe status=closed_by_broker error=404 NOT_FOUND - no queue '$Q'"
assert_not_contains "$log" "connection lost"
assert_eq 1 "$(grep -c 'connected to RabbitMQ' <<<"$log")" "connections opened"
pass
