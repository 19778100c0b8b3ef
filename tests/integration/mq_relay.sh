#!/usr/bin/env bash
# One MessageClient consuming and publishing, as a worker does: deliveries that arrive while a
# publish waits for its confirm are kept for mq_consume_next; when the broker closes the channel
# (publish to a missing exchange) the consumer is reported lost, acks of deliveries from the old
# channel are refused instead of settling another message, and after resubscribing the broker
# redelivers the message.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

IN=$(unique_name in)
OUT=$(unique_name out)
declare_queue "$IN"
declare_queue "$OUT"

# Five messages wait before the consumer starts: with prefetch they all arrive at once, most of
# them while the first relay publish waits for its confirm.
"$PROBE" publish -n 5 -b 5 -I "$IN-m" ":$IN" >/dev/null 2>&1 || fail "seeding $IN failed"
"$PROBE" relay -q "$IN" -n 5 -t 3000 ":$OUT" >"$TEST_TMP/relay.out" 2>"$TEST_TMP/relay.err" ||
    fail "relay failed: $(cat "$TEST_TMP/relay.out" "$TEST_TMP/relay.err")"
on_fail cat "$TEST_TMP/relay.out" "$TEST_TMP/relay.err"
out=$(cat "$TEST_TMP/relay.out")
assert_eq 5 "$(grep -c '^relay .* status=ok rc=0$' <<<"$out")" "relayed publishes confirmed"
for i in 0 1 2 3 4; do
    assert_contains "$out" "delivery $i message_id=$IN-m$i "
done
assert_not_contains "$out" "settle status="
assert_eq 0 "$(queue_messages "$IN")" "left in $IN"
assert_eq 5 "$(queue_messages "$OUT")" "relayed into $OUT"
mgmt_post "queues/%2F/$(urlencode "$OUT")/get" '{"count":1,"ackmode":"ack_requeue_true","encoding":"auto"}' >"$TEST_TMP/get.json"
assert_eq "$IN-m0-relayed" "$(jq -r '.[0].properties.message_id' "$TEST_TMP/get.json")" "relayed message id"

# Relaying into a missing exchange: 404 closes the channel under the consumer.
MISSING=$(unique_name missing)
"$PROBE" publish -n 1 -I "$IN-x" ":$IN" >/dev/null 2>&1 || fail "seeding $IN failed"
rc=0
"$PROBE" relay -q "$IN" -n 2 -t 3000 "$MISSING:k" >"$TEST_TMP/closed.out" 2>"$TEST_TMP/closed.err" || rc=$?
on_fail cat "$TEST_TMP/closed.out" "$TEST_TMP/closed.err"
assert_eq 0 "$rc" "relay exit status (2 deliveries: the original and the redelivery)"
out=$(cat "$TEST_TMP/closed.out")
assert_contains "$out" "delivery 0 message_id=$IN-x0 "
assert_contains "$out" "relay 0 exchange=$MISSING key=k status=closed_by_broker rc=-7"
assert_contains "$out" "settle status=connection error=delivery of an earlier channel"
assert_contains "$out" "consume status=closed_by_broker error=404 NOT_FOUND - no exchange '$MISSING'"
assert_contains "$out" "resubscribe status=ok"
assert_contains "$out" "delivery 1 message_id=$IN-x0 type= execution_id= content_type=application/json redelivered=1"
assert_eq 1 "$(grep -c 'connected to RabbitMQ' "$TEST_TMP/closed.err")" "connections opened"
# Never acked: the broker kept it and requeued it when the probe disconnected.
wait_until 10 "[ \"\$(queue_messages '$IN')\" = 1 ]"
pass
