#!/usr/bin/env bash
# /livez and /readyz on the real stack, in the executor and a worker: /readyz turns 503 within
# 5 s of the broker stopping and 200 again after it returns, while /livez stays 200 throughout.
# Stops and starts the stack's broker: not to be run beside other tests.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack

worker_env
export WARREN__WORKER__HTTP_LISTEN=127.0.0.1:0
export WARREN__CIRCUIT_BREAKER__MESSAGING__OPEN_TIMEOUT_S=1
export WARREN__MESSAGE_QUEUE__RABBITMQ__HEARTBEAT_S=2
exec_start ex
new_worker w hw
start_worker wk "$w"
E="http://127.0.0.1:$(http_port ex)"
W="http://127.0.0.1:$(http_port wk health)"
# Whatever happens below, the broker runs again when the test ends.
on_exit 'stack rabbit-start >/dev/null 2>&1 || true'

code() { curl -s -o "$TEST_TMP/body" -w '%{http_code}' --max-time 3 "$1" || true; }
# shellcheck disable=SC2317 # called by wait_until
both_ready() { [ "$(code "$E/readyz")" = 200 ] && [ "$(code "$W/readyz")" = 200 ]; }
# shellcheck disable=SC2317 # called by wait_until
both_down() { [ "$(code "$E/readyz")" = 503 ] && [ "$(code "$W/readyz")" = 503 ]; }

wait_until 20 both_ready
assert_eq 200 "$(code "$E/livez")" "executor livez"
assert_eq 200 "$(code "$W/livez")" "worker livez"
assert_eq "ready|$w" "$(curl -s "$W/readyz" | jq -r '"\(.status)|\(.worker)"')" "worker readyz body"

log "broker stopped: /readyz 503 within 5 s, /livez 200"
stack rabbit-stop >/dev/null
t0=$(date +%s%N)
wait_until 5 both_down
log "not ready after $((($(date +%s%N) - t0) / 1000000)) ms"
assert_eq 200 "$(code "$E/livez")" "executor livez while the broker is down"
assert_eq 200 "$(code "$W/livez")" "worker livez while the broker is down"
code "$E/readyz" >/dev/null
jq -e '.status == "not_ready" and (.reasons | length) > 0' "$TEST_TMP/body" >/dev/null ||
    fail "executor readyz body says why: $(cat "$TEST_TMP/body")"

log "broker back: 200 again"
stack rabbit-start >/dev/null
wait_until 60 both_ready
assert_eq 200 "$(code "$E/livez")" "executor livez"
assert_eq 200 "$(code "$W/livez")" "worker livez"
pass
