#!/usr/bin/env bash
# MessageClient publishing with confirms: every publish acked, the queue holds exactly what was
# published, every message carries the documented properties (docs/messageclient.md), and
# consuming acks them all.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

Q=$(unique_name confirm)
declare_queue "$Q"

# 40 single publishes and 60 in pipelined batches of 20, all to the default exchange.
"$PROBE" publish -n 40 -T ExecutionRequested -E 4242 -C corr-7 -I "$Q-msg-" ":$Q" \
    >"$TEST_TMP/single.out" 2>"$TEST_TMP/single.err" || fail "single publishes failed: $(cat "$TEST_TMP/single.out")"
"$PROBE" publish -n 60 -b 20 -T ExecutionCompleted ":$Q" \
    >"$TEST_TMP/batch.out" 2>"$TEST_TMP/batch.err" || fail "batch publishes failed: $(cat "$TEST_TMP/batch.out")"
on_fail cat "$TEST_TMP/single.out" "$TEST_TMP/batch.out" "$TEST_TMP/single.err" "$TEST_TMP/batch.err"

ok=$(cat "$TEST_TMP/single.out" "$TEST_TMP/batch.out" | grep -c ' status=ok rc=0$' || true)
assert_eq 100 "$ok" "publishes confirmed with MQ_OK"
assert_contains "$(cat "$TEST_TMP/batch.out")" "summary published=60 failed=0"
assert_eq 100 "$(queue_messages "$Q")" "messages in $Q (rabbitmqctl)"

# Properties as the broker stored them (ack_requeue_true leaves the messages in place).
mgmt_post "queues/%2F/$(urlencode "$Q")/get" '{"count":100,"ackmode":"ack_requeue_true","encoding":"auto"}' \
    >"$TEST_TMP/get.json"
props() { jq -r ".[$1].properties | $2" "$TEST_TMP/get.json"; }
assert_eq "application/json" "$(props 0 .content_type)" "content_type"
assert_eq 2 "$(props 0 .delivery_mode)" "delivery_mode"
assert_eq "$Q-msg-0" "$(props 0 .message_id)" "given message_id"
assert_eq "ExecutionRequested" "$(props 0 .type)" "type"
assert_eq "mq_probe" "$(props 0 .app_id)" "app_id"
assert_eq "corr-7" "$(props 0 .correlation_id)" "correlation_id"
assert_eq "4242" "$(props 0 '.headers.execution_id')" "headers.execution_id"
now=$(date +%s)
ts=$(props 0 .timestamp)
{ [ "$ts" -le "$now" ] && [ "$ts" -gt $((now - 120)) ]; } || fail "timestamp $ts not within the last two minutes of $now"
# Without a given id the client generates a UUID v4; without execution_id there is no header.
[[ "$(props 99 .message_id)" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] ||
    fail "generated message_id is not a UUID v4: $(props 99 .message_id)"
assert_eq "null" "$(props 99 '.headers.execution_id')" "no execution_id header when none given"
ids=$(jq -r '.[].properties.message_id' "$TEST_TMP/get.json" | sort -u | wc -l)
assert_eq 100 "$ids" "distinct message ids"

# Consume everything with manual acks: the queue ends empty.
"$PROBE" consume -q "$Q" -n 100 -t 5000 >"$TEST_TMP/consume.out" 2>"$TEST_TMP/consume.err" ||
    fail "consume failed: $(tail -n 3 "$TEST_TMP/consume.out")"
assert_contains "$(sed -n 1p "$TEST_TMP/consume.out")" "message_id=$Q-msg-0 type=ExecutionRequested execution_id=4242 content_type=application/json"
assert_eq 0 "$(queue_messages "$Q")" "messages left after acking all"

# Per-message TTL goes out as the expiration property (milliseconds, as text).
"$PROBE" publish -n 1 -x 600000 ":$Q" >/dev/null 2>&1 || fail "publish with expiration failed"
mgmt_post "queues/%2F/$(urlencode "$Q")/get" '{"count":1,"ackmode":"ack_requeue_true","encoding":"auto"}' \
    >"$TEST_TMP/get.json"
assert_eq "600000" "$(props 0 .expiration)" "expiration"

# A nack without requeue removes the message (no dead-letter exchange on this queue).
"$PROBE" consume -q "$Q" -n 1 --nack >"$TEST_TMP/nack.out" 2>&1 || fail "nack consume failed: $(cat "$TEST_TMP/nack.out")"
assert_not_contains "$(cat "$TEST_TMP/nack.out")" "settle status="
assert_eq 0 "$(queue_messages "$Q")" "messages left after nack(requeue=false)"
pass
