#!/usr/bin/env bash
# A client cannot exhaust the executor's API: bodies over api.max_body_bytes get 413 (JSON, before
# the body is read), 10,000 headers are refused, a client sending a byte a second is closed after
# api.header_timeout_s; past api.max_connections a new connection takes the slot of the one that
# has waited longest for its head, and waits when every slot is receiving a body. The API answers
# normally afterwards.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
action=$(unique_name act)
forget_executions "$action"
export WARREN__API__MAX_BODY_BYTES=4096 WARREN__API__HEADER_TIMEOUT_S=3
export WARREN__API__MAX_CONNECTIONS=4 WARREN__API__MAX_HEADER_BYTES=8192
api_start ex
port=${API##*:}
mine() { psql_q "select count(*) from executions where action_ref = '$action'"; }
healthy() { assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$API/livez")" "$1"; }

log "bodies over the limit: 413"
pad=$(head -c 5000 /dev/zero | tr '\0' x)
expect 413 POST /api/v1/executions "{\"action_ref\":\"$action\",\"params\":{\"pad\":\"$pad\"}}"
assert_contains "$(jq -r .error <<<"$CALL_BODY")" "payload_too_large"
head -c 200000 /dev/zero | tr '\0' x >"$TEST_TMP/huge"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "X-API-Key: $API_WRITE_KEY" \
    -H 'Content-Type: application/json' --data-binary "@$TEST_TMP/huge" "$API/api/v1/executions")
assert_eq 413 "$code" "a body far over the limit"
assert_eq 0 "$(mine)" "nothing inserted"
healthy "after large bodies"

log "10,000 headers: refused"
python3 - "$port" >"$TEST_TMP/headers.out" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
req = b"GET /livez HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(10000)) + b"\r\n"
try:
    s.sendall(req)
except OSError:
    pass  # the server may close while we still send
data = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
print(data.split(b"\r\n", 1)[0].decode("latin-1") or "closed")
PY
status=$(cat "$TEST_TMP/headers.out")
case "$status" in
"closed" | "HTTP/1.1 4"*) ;;
*) fail "10,000 headers answered: $status" ;;
esac
healthy "after 10,000 headers"

log "a client sending one byte a second is closed after header_timeout_s"
python3 - "$port" >"$TEST_TMP/slow.out" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.settimeout(0.0)
start = time.monotonic()
for c in b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 40:
    try:
        s.send(bytes([c]))
        if s.recv(1) == b"":
            break
    except BlockingIOError:
        pass
    except OSError:
        break
    time.sleep(1)
print("%.1f" % (time.monotonic() - start))
PY
elapsed=$(cat "$TEST_TMP/slow.out")
awk -v e="$elapsed" 'BEGIN { exit !(e >= 2.5 && e <= 6) }' || fail "slow client closed after ${elapsed}s, not ~3s"
healthy "after the slow client"

log "past max_connections a new client takes the slot of the one waiting longest for its head"
exec 3<>"/dev/tcp/127.0.0.1/$port"
sleep 0.2
exec 4<>"/dev/tcp/127.0.0.1/$port" 5<>"/dev/tcp/127.0.0.1/$port" 6<>"/dev/tcp/127.0.0.1/$port"
sleep 0.3
healthy "a fifth connection served while four wait for their heads"
assert_eq "" "$(timeout 2 cat <&3 || echo open)" "the oldest was closed for it"
exec 3>&- 4>&- 5>&- 6>&-

log "past max_connections with every slot receiving a body, new clients wait until one is done"
for fd in 3 4 5 6; do
    eval "exec $fd<>/dev/tcp/127.0.0.1/$port"
    printf 'POST /api/v1/executions HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{' \
        "$API_WRITE_KEY" >&$fd
done
sleep 0.3
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$API/livez" || true)
assert_eq 000 "$code" "a fifth connection is not served while four receive bodies"
exec 3>&- 4>&-
sleep 0.3
healthy "served once connections closed"
exec 5>&- 6>&-

log "the API still works"
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action\"}"
assert_eq 1 "$(mine)" "one row"
exec_stop "$EXEC_PID" ex
pass
