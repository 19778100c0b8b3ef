#!/usr/bin/env bash
# Hostile clients cannot make the API hold memory or slots: 64 key-less connections each sending
# all but the last byte of a 16 MiB body get 401 from their heads and the executor stays under
# 64 MiB; a key-less write gets 401 before any of its body is sent; a Content-Length over
# api.max_body_bytes gets 413 at once; past api.body_budget_bytes a body gets 503 with
# Retry-After; a head or a body that does not arrive within api.header_timeout_s or
# api.body_timeout_s has its connection closed. The API answers normally afterwards.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

RAW="$WARREN_SOURCE_DIR/tests/lib/http_raw.py"
RSS_BOUND_KB=$((64 * 1024))
# Under AddressSanitizer shadow memory and redzones add to every process (tests/integration/
# mq_oversized_body.sh); a body held whole would still add its 16 MiB per connection on top.
[ -z "${ASAN_OPTIONS:-}" ] || RSS_BOUND_KB=$((96 * 1024))
MIB=$((1024 * 1024))

isolate_topology
action=$(unique_name act)
forget_executions "$action"
export WARREN__API__HEADER_TIMEOUT_S=2 WARREN__API__BODY_TIMEOUT_S=2
api_start ex
port=${API##*:}
mine() { psql_q "select count(*) from executions where action_ref = '$action'"; }
healthy() { assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$API/livez")" "$1"; }
rss_kb() { awk "/^$2:/ { print \$2 }" "/proc/$1/status"; }

log "64 key-less connections, each with all but the last byte of a 16 MiB body"
python3 "$RAW" "$port" flood 64 $((16 * MIB)) "" >"$TEST_TMP/flood.out"
assert_eq "64 401 unauthorized" "$(awk '{ print $1, $2 }' "$TEST_TMP/flood.out" | sort | uniq -c | awk '{ print $1, $2, $3 }')" \
    "every connection refused on its head"
hwm=$(rss_kb "$EXEC_PID" VmHWM)
log "executor peak RSS ${hwm} kB; body bytes sent per connection: $(awk '{ print $3 }' "$TEST_TMP/flood.out" | sort -n | tail -1) at most"
[ "$hwm" -lt "$RSS_BOUND_KB" ] || fail "executor peak RSS ${hwm} kB, bound $RSS_BOUND_KB kB"
healthy "after the flood"

# at_once CODE ERROR WHAT HEADERS [LENGTH]: a POST head with HEADERS (each ending \r\n) and a
# Content-Length of LENGTH (4 MB), no body sent, is answered CODE with the JSON error ERROR within a second.
at_once() {
    local out code took body
    out=$(python3 "$RAW" "$port" ask "$3" "b'POST /api/v1/executions HTTP/1.1\r\nHost: x\r\n$4Content-Type: application/json\r\nContent-Length: ${5:-4000000}\r\n\r\n'")
    read -r code took body <<<"$out"
    assert_eq "$1" "$code" "$3 ($out)"
    assert_eq "$2" "$(jq -r .error <<<"$body")" "$3: the JSON error"
    awk -v t="$took" 'BEGIN { exit !(t < 1) }' || fail "$3: $1 took ${took}s"
}

log "a write without a write key is refused before its body is sent"
at_once 401 unauthorized "no key" ""
at_once 403 forbidden "a wrong key" "X-API-Key: wrong-key-0123456789\r\n"
at_once 403 forbidden "a read key on a write" "X-API-Key: $API_READ_KEY\r\n"

log "a Content-Length over api.max_body_bytes gets 413 at once"
at_once 413 payload_too_large "over the limit" "X-API-Key: $API_WRITE_KEY\r\n" $((8 * MIB + 1))
healthy "after the refusals"
metric() { curl -sS --max-time 5 "$API/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
assert_eq "65|2|1" \
    "$(metric 'warren_http_refused_total{code="401"}')|$(metric 'warren_http_refused_total{code="403"}')|$(metric 'warren_http_refused_total{code="413"}')" \
    "every refusal counted by its status (the flood's 64 and one more 401)"
exec_stop "$EXEC_PID" ex

log "past api.body_budget_bytes: 503 with Retry-After"
export WARREN__API__MAX_BODY_BYTES=4096 WARREN__API__BODY_BUDGET_BYTES=8192
export WARREN__API__BODY_TIMEOUT_S=60 # the held bodies hold the budget as long as needed
api_start ex2
port=${API##*:}
# Two bodies of 4096 bytes that never finish hold the whole budget.
exec 3<>"/dev/tcp/127.0.0.1/$port" 4<>"/dev/tcp/127.0.0.1/$port"
for fd in 3 4; do
    printf 'POST /api/v1/executions HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{' \
        "$API_WRITE_KEY" >&$fd
done
sleep 0.3
out=$(python3 "$RAW" "$port" ask budget "b'POST /api/v1/executions HTTP/1.1\r\nHost: x\r\nX-API-Key: $API_WRITE_KEY\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'")
read -r code took body <<<"$out"
assert_eq 503 "$code" "a body past the budget ($out)"
assert_eq busy "$(jq -r .error <<<"$body")" "the JSON error"
curl -s -D "$TEST_TMP/h503" -o /dev/null --max-time 5 -H "X-API-Key: $API_WRITE_KEY" \
    -H 'Content-Type: application/json' --data '{}' "$API/api/v1/executions"
assert_contains "$(tr -d '\r' <"$TEST_TMP/h503")" "Retry-After: 1" "Retry-After"
exec 3>&-
sleep 0.3
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action\"}"
assert_eq 1 "$(mine)" "a submission once one body let go of the budget"
exec 4>&-
exec_stop "$EXEC_PID" ex2

log "deadlines: a head and a body that do not arrive whole are closed"
export WARREN__API__BODY_TIMEOUT_S=2
api_start ex3
port=${API##*:}
read -r closed last <<<"$(python3 "$RAW" "$port" slow 20 8)"
assert_eq 20 "$closed" "half request lines closed"
awk -v e="$last" 'BEGIN { exit !(e >= 1.5 && e <= 4) }' || fail "slow heads closed after ${last}s, not ~2s"
start=$(date +%s.%N)
exec 5<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /api/v1/executions HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a"' \
    "$API_WRITE_KEY" >&5
timeout 10 cat <&5 >/dev/null || true
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
exec 5>&-
awk -v e="$elapsed" 'BEGIN { exit !(e >= 1.5 && e <= 4) }' || fail "a slow body closed after ${elapsed}s, not ~2s"
healthy "after the deadlines"
assert_eq 21 "$(metric warren_http_timed_out_total)" "the 20 slow heads and the slow body counted"
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action\"}"
exec_stop "$EXEC_PID" ex3
pass
