#!/usr/bin/env bash
# Messaging circuit breaker against a real outage: with the broker stopped, publishes fail until
# the breaker opens after 5 failures; then calls fail fast (<100 ms) with MQ_ERR_BREAKER_OPEN.
# After the broker is back and open_timeout (2 s) has passed, a half-open probe goes through and
# two successes close the breaker.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

Q=$(unique_name breaker)
declare_queue "$Q"
# The broker must be running again when the test ends, whatever happens.
on_exit 'stack rabbit-start >/dev/null 2>&1 || true'

# Breaker settings through the configuration's environment overrides (mq_options_from_config).
bg_start loop env WARREN__CIRCUIT_BREAKER__MESSAGING__FAILURE_THRESHOLD=5 \
    WARREN__CIRCUIT_BREAKER__MESSAGING__SUCCESS_THRESHOLD=2 \
    WARREN__CIRCUIT_BREAKER__MESSAGING__OPEN_TIMEOUT_S=2 \
    WARREN__MESSAGE_QUEUE__RABBITMQ__CONNECT_TIMEOUT_MS=1000 \
    "$PROBE" loop -i 200 -d 120 -p 2000 ":$Q"
LOOP=$BG_PID
LOG=$(bg_log loop)
wait_log loop 'status=ok breaker=closed' 15

stack rabbit-stop >/dev/null 2>&1
wait_log loop 'breaker=open' 30
# Let the open breaker turn a few calls away, then bring the broker back.
wait_until 10 "[ \$(grep -c 'status=breaker_open' '$LOG') -ge 5 ]"
stack rabbit-start >/dev/null 2>&1
wait_log loop 'from=half_open to=closed' 30
# The loop line of the closing call comes after the log line.
n=$(grep -c '^loop ' "$LOG")
wait_until 5 "[ \$(grep -c '^loop ' '$LOG') -gt $n ]"
bg_stop "$LOOP" || true

lines=$(grep '^loop ' "$LOG")
# Failures before the breaker opened: exactly failure_threshold (5) consecutive ones.
first_open=$(grep -n -m1 'breaker=open' <<<"$lines" | cut -d: -f1)
before=$(head -n "$first_open" <<<"$lines" | tac | awk 'stop { next } /status=ok/ { stop = 1; next } { print }')
fails=$(grep -cE 'status=(connection|timeout)' <<<"$before" || true)
assert_eq 5 "$fails" "failed calls up to the opening"
assert_eq 0 "$(grep -c 'status=breaker_open' <<<"$before" || true)" "fast failures before the opening"
assert_contains "$(sed -n "${first_open}p" <<<"$lines")" "breaker=open"

# While open: fail fast, no I/O.
fast=$(grep 'status=breaker_open' <<<"$lines")
[ "$(wc -l <<<"$fast")" -ge 5 ] || fail "too few fast failures: $fast"
slow=$(calls_slower_than 100 <<<"$fast")
[ -z "$slow" ] || fail "breaker_open calls took 100 ms or more: $slow"

# Recovery: the first success is the half-open probe, the second closes the breaker.
recovered=$(tail -n +"$first_open" <<<"$lines" | awk '/status=ok/ { seen++ } seen && n < 2 { print; n++ }')
assert_contains "$(sed -n 1p <<<"$recovered")" "status=ok breaker=half_open"
assert_contains "$(sed -n 2p <<<"$recovered")" "status=ok breaker=closed"
# No call may have gone through while open except probes: a probe only starts >= 2 s after opening.
open_t=$(sed -n "${first_open}p" <<<"$lines" | sed -E 's/.* t_ms=([0-9]+) .*/\1/')
probe_t=$(grep -m1 -E 'breaker=half_open|status=(connection|timeout) breaker=open' <<<"$(tail -n +"$((first_open + 1))" <<<"$lines")" |
    sed -E 's/.* t_ms=([0-9]+) .*/\1/')
[ $((probe_t - open_t)) -ge 1900 ] || fail "first call after opening that did I/O came $((probe_t - open_t)) ms after the opening"
assert_contains "$(cat "$LOG")" "circuit breaker state change breaker=messaging from=closed to=open"
assert_contains "$(cat "$LOG")" "from=open to=half_open"
assert_contains "$(cat "$LOG")" "from=half_open to=closed"
pass
