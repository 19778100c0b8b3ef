#!/usr/bin/env bash
# MessageClient failure reporting: a mandatory publish nobody can route is MQ_ERR_RETURNED, a
# publish to a missing exchange is closed by the broker, and the same client publishes fine next.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

EX=$(unique_name lonely)
mgmt_put "exchanges/%2F/$(urlencode "$EX")" '{"type":"direct","durable":false,"auto_delete":false}' >/dev/null
on_exit mgmt_delete "exchanges/%2F/$(urlencode "$EX")"
Q=$(unique_name after)
declare_queue "$Q"

# Mandatory and unroutable: basic.return then basic.ack; the return must win. Batch of 3 too.
rc=0
"$PROBE" publish -m -n 4 -b 3 "$EX:nowhere" >"$TEST_TMP/mandatory.out" 2>"$TEST_TMP/mandatory.err" || rc=$?
on_fail cat "$TEST_TMP/mandatory.out" "$TEST_TMP/mandatory.err"
assert_eq 1 "$rc" "mq_probe exit status for returned publishes"
assert_eq 4 "$(grep -c 'status=returned rc=-4$' "$TEST_TMP/mandatory.out")" "publishes reported MQ_ERR_RETURNED"
assert_contains "$(cat "$TEST_TMP/mandatory.err")" "reply_code=312 reply_text=NO_ROUTE"

# Not mandatory: the broker acks and drops it; the client reports what the broker said.
"$PROBE" publish -n 1 "$EX:nowhere" >"$TEST_TMP/plain.out" 2>&1 || fail "non-mandatory publish failed"
assert_contains "$(cat "$TEST_TMP/plain.out")" "publish 0 exchange=$EX key=nowhere status=ok rc=0"

# Missing exchange: 404 closes the channel; the client answers close-ok, reopens, and the
# next publish on the same client (same process) is confirmed.
MISSING=$(unique_name missing)
rc=0
"$PROBE" publish -n 1 "$MISSING:k" ":$Q" >"$TEST_TMP/missing.out" 2>"$TEST_TMP/missing.err" || rc=$?
on_fail cat "$TEST_TMP/missing.out" "$TEST_TMP/missing.err"
assert_eq 1 "$rc" "mq_probe exit status with one failed publish"
out=$(cat "$TEST_TMP/missing.out")
assert_contains "$out" "publish 0 exchange=$MISSING key=k status=closed_by_broker rc=-7"
assert_contains "$out" "error 404 NOT_FOUND - no exchange '$MISSING'"
assert_contains "$out" "publish 1 exchange= key=$Q status=ok rc=0"
assert_eq 1 "$(grep -c 'connected to RabbitMQ' "$TEST_TMP/missing.err")" "connections opened (channel reopened, not reconnected)"
assert_eq 1 "$(queue_messages "$Q")" "message published after the channel was reopened"

# A raw RPC through mq_conn() (as topology code does) that closes the channel, with nobody
# calling mq_reopen_channel(): the next publish notices and reopens instead of timing out.
"$PROBE" publish -p 2000 -P "$MISSING" ":$Q" >"$TEST_TMP/raw.out" 2>"$TEST_TMP/raw.err" ||
    fail "publish after a failed raw RPC: $(cat "$TEST_TMP/raw.out" "$TEST_TMP/raw.err")"
out=$(cat "$TEST_TMP/raw.out")
assert_contains "$out" "declare passive queue=$MISSING reply=404 NOT_FOUND - no queue '$MISSING'"
assert_contains "$out" "publish 0 exchange= key=$Q status=ok rc=0"
assert_contains "$(cat "$TEST_TMP/raw.err")" "reopened the channel after a failed RPC"
assert_eq 2 "$(queue_messages "$Q")" "messages after the raw-RPC case"
pass
