#!/usr/bin/env bash
# The API reads requests strictly and answers every error as JSON {error, detail}: duplicate or
# conflicting Content-Length, Transfer-Encoding beside it, HTTP/1.1 without Host, a NUL or a
# percent-encoded control character in the path, unknown query parameters, bare LF line ends and
# folded headers get 400; TRACE, CONNECT and unknown methods 501, PUT 405, HTTP/2.0 505; truncated
# JSON is described without json-c's state names. Nothing refused is applied.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

RAW="$WARREN_SOURCE_DIR/tests/lib/http_raw.py"
isolate_topology
action=$(unique_name act)
forget_executions "$action"
api_start ex
port=${API##*:}
mine() { psql_q "select count(*) from executions where action_ref = '$action'"; }
K="X-API-Key: $API_WRITE_KEY"
body="{\"action_ref\":\"$action\"}"
len=${#body}
id=$(jq -r .id <<<"$(call POST /api/v1/executions "$body" | cut -d' ' -f2-)")
[ "$id" -gt 0 ] 2>/dev/null || fail "no execution to read"
assert_eq 1 "$(mine)" "one submission to start with"

# refused CODE ERROR NAME REQUEST: the raw request gets CODE with the JSON error ERROR.
refused() {
    local out code body
    out=$(python3 "$RAW" "$port" ask "$3" "$4")
    read -r code _ body <<<"$out"
    assert_eq "$1" "$code" "$3 ($out)"
    jq -e --arg e "$2" '.error == $e and (.detail | type) == "string"' <<<"$body" >/dev/null ||
        fail "$3: not the JSON error $2: $body"
    log "$3: $code $(jq -r .detail <<<"$body")"
}
post="POST /api/v1/executions HTTP/1.1\r\nHost: x\r\n$K\r\nContent-Type: application/json\r\n"
refused 400 bad_request "two equal Content-Length" "b'${post}Content-Length: $len\r\nContent-Length: $len\r\n\r\n$body'"
refused 400 bad_request "conflicting Content-Length" "b'${post}Content-Length: $len\r\nContent-Length: 2\r\n\r\n$body'"
refused 400 bad_request "a Content-Length list" "b'${post}Content-Length: $len, $len\r\n\r\n$body'"
refused 400 bad_request "Transfer-Encoding and Content-Length" "b'${post}Transfer-Encoding: chunked\r\nContent-Length: $len\r\n\r\n$body'"
refused 501 not_implemented "chunked" "b'${post}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n'"
refused 400 bad_request "HTTP/1.1 without Host" "b'GET /api/v1/executions/$id HTTP/1.1\r\n$K\r\n\r\n'"
refused 400 bad_request "two Host headers" "b'GET /livez HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'"
refused 400 bad_request "%00 in the path" "b'GET /api/v1/executions/$id%00 HTTP/1.1\r\nHost: x\r\n$K\r\n\r\n'"
refused 400 bad_request "%0a in the path" "b'GET /api/v1/executions/$id%0a HTTP/1.1\r\nHost: x\r\n$K\r\n\r\n'"
refused 400 bad_request "a raw NUL in the path" "b'GET /api/v1/executions/$id\x00 HTTP/1.1\r\nHost: x\r\n$K\r\n\r\n'"
refused 400 bad_request "a raw control character in the path" "b'GET /livez\x01 HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 400 bad_request "an unknown query parameter" "b'GET /api/v1/executions/$id?x=1 HTTP/1.1\r\nHost: x\r\n$K\r\n\r\n'"
refused 400 bad_request "a query on a write" "b'POST /api/v1/executions?x=1 HTTP/1.1\r\nHost: x\r\n$K\r\nContent-Type: application/json\r\nContent-Length: $len\r\n\r\n$body'"
refused 400 bad_request "a query on /livez" "b'GET /livez?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 400 bad_request "bare LF" "b'GET /livez HTTP/1.1\nHost: x\n\n'"
refused 400 bad_request "a folded header" "b'GET /livez HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  2\r\n\r\n'"
refused 400 bad_request "a space before the colon" "b'GET /livez HTTP/1.1\r\nHost : x\r\n\r\n'"
refused 400 bad_request "an absolute target" "b'GET http://x/livez HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 400 bad_request "HEAD with a body" "b'HEAD /livez HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde'"
refused 501 not_implemented TRACE "b'TRACE /livez HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 501 not_implemented CONNECT "b'CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 501 not_implemented "an unknown method" "b'BREW /livez HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 405 method_not_allowed PUT "b'PUT /livez HTTP/1.1\r\nHost: x\r\n\r\n'"
refused 505 http_version_not_supported HTTP/2.0 "b'GET /livez HTTP/2.0\r\nHost: x\r\n\r\n'"
refused 417 expectation_failed "Expect: other" "b'${post}Expect: 200-ok\r\nContent-Length: $len\r\n\r\n$body'"
pad=$(head -c 20000 /dev/zero | tr '\0' a)
refused 431 header_too_large "a head too large" "b'GET /livez HTTP/1.1\r\nHost: x\r\nX-Pad: $pad\r\n\r\n'"
assert_eq 1 "$(mine)" "nothing refused was applied"

log "truncated JSON is described, not named by json-c's state"
expect 400 POST /api/v1/executions "{\"action_ref\":\"$action\""
assert_eq "malformed JSON: the text ends inside a value" "$(jq -r .detail <<<"$CALL_BODY")" "the detail"
expect 400 POST /api/v1/executions "{\"action_ref\" 1}"
assert_not_contains "$(jq -r .detail <<<"$CALL_BODY")" "continue" "the detail of a syntax error"

log "a body with bare LFs, sent in one write with its head, is the body's business: 201"
lf_body='{\n  "action_ref": "'"$action"'"\n}' # \n: a bare LF once the literal is read
lf_len=$(printf '%b' "$lf_body" | wc -c)
out=$(python3 "$RAW" "$port" ask "a multi-line body" "b'${post}Content-Length: $lf_len\r\n\r\n$lf_body'")
assert_eq 201 "$(cut -d' ' -f1 <<<"$out")" "a multi-line JSON body in the head's packet ($out)"

log "HTTP/1.0 without Host, and kept-alive requests one after the other, are served"
out=$(python3 "$RAW" "$port" ask http10 "b'GET /livez HTTP/1.0\r\n\r\n'")
assert_eq 200 "$(cut -d' ' -f1 <<<"$out")" "HTTP/1.0 ($out)"
curl -s --max-time 10 -o /dev/null -o /dev/null -w '%{http_code}\n' -H "$K" "$API/api/v1/executions/$id" \
    "$API/api/v1/executions/$id" >"$TEST_TMP/two"
assert_eq "200 200" "$(tr '\n' ' ' <"$TEST_TMP/two" | sed 's/ $//')" "two requests on one connection"
python3 - "$port" "$API_WRITE_KEY" "$body" >"$TEST_TMP/pipelined" <<'PY'
import re, socket, sys
port, key, body = int(sys.argv[1]), sys.argv[2], sys.argv[3]
post = ("POST /api/v1/executions HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\n\r\n%s" % (key, len(body), body)).encode()
bad = b"GET /livez HTTP/1.1\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(post + post + bad)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(" ".join(c.decode() for c in re.findall(rb"HTTP/1.1 (\d{3}) ", data)))
PY
assert_eq "201 201 400" "$(cat "$TEST_TMP/pipelined")" "two pipelined submissions, then a head without Host"
assert_eq 4 "$(mine)" "the multi-line and the pipelined submissions applied"
exec_stop "$EXEC_PID" ex
pass
