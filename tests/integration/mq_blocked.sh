#!/usr/bin/env bash
# MessageClient under a broker resource alarm: the broker stops reading from publishing
# connections. Publishes must stay bounded by publish_timeout_ms (rabbitmq-c 0.11 would wait
# forever), connection.blocked is seen (advertised capability), and publishing resumes after
# the alarm clears, on the same connection.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

Q=$(unique_name blocked)
declare_queue "$Q"
on_exit 'rmq set_vm_memory_high_watermark 0.4 >/dev/null 2>&1 || true'

# shellcheck disable=SC2317 # called in wait_until's condition
mem_alarm() { mgmt_get "nodes/$WARREN_RABBIT_NODE" | jq -r .mem_alarm; }

# Breaker open timeout 1 s so the loop probes again soon after the alarm clears.
bg_start loop "$PROBE" loop -i 200 -d 120 -f 5 -s 2 -o 1 -p 1000 ":$Q"
LOOP=$BG_PID
LOG=$(bg_log loop)
wait_log loop 'status=ok breaker=closed' 15

rmq set_vm_memory_high_watermark absolute 1MB >/dev/null
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(mem_alarm)" = true ]'
wait_log loop 'connection blocked by broker' 15
wait_until 10 "[ \$(grep -cE '^loop .*status=(timeout|connection|breaker_open)' '$LOG') -ge 6 ]"

rmq set_vm_memory_high_watermark 0.4 >/dev/null
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(mem_alarm)" = false ]'
wait_log loop 'connection unblocked by broker' 15
n=$(grep -c '^loop .*status=ok' "$LOG")
wait_until 15 "[ \$(grep -c '^loop .*status=ok' '$LOG') -ge $((n + 2)) ]"
bg_stop "$LOOP" || true

lines=$(grep '^loop ' "$LOG")
# Bounded: no call took much longer than publish_timeout_ms (1000).
slow=$(calls_slower_than 1500 <<<"$lines")
[ -z "$slow" ] || fail "publishes not bounded by publish_timeout_ms: $slow"
# Once blocked is known, publishes fail at once without writing.
assert_contains "$(cat "$LOG")" "error=connection blocked by the broker (resource alarm)"
# One connection throughout: blocked is not a reason to reconnect.
assert_eq 1 "$(grep -c 'connected to RabbitMQ' "$LOG")" "connections opened"
assert_not_contains "$(cat "$LOG")" "connection lost"
pass
