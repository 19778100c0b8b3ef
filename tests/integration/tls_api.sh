#!/usr/bin/env bash
# HTTPS on api.listen with the stack's CA (.stack/tls): curl verifies the executor's certificate
# and gets /livez and an authenticated API answer; a client trusting another CA, or speaking
# plain HTTP to the port, is refused and the server goes on serving; TLS 1.2 is the floor; with
# api.tls_client_ca_file a client without a certificate of that CA is refused and one with it
# gets in; SIGHUP swaps a renewed certificate (same paths, new files) for new connections; a
# missing key file stops the start with an error naming the key; a worker's http_listen serves
# HTTPS with its own keys; a non-loopback api.listen without TLS logs a warning. The CLI's
# submit, get and dlq list work over https:// with WARREN_API_CA, check the host name, refuse a
# CA they do not know and skip the check only with WARREN_API_INSECURE=1, which they say.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
isolate_topology
stack_tls=$WARREN_STACK_TLS_DIR

certs=$TEST_TMP/certs
mkdir -p "$certs"
ossl() { openssl "$@" 2>>"$certs/openssl.log" || fail "openssl $1: $(tail -n 5 "$certs/openssl.log")"; }
# A second CA and a localhost server certificate it signed: the "renewed" certificate.
ossl req -x509 -new -newkey rsa:2048 -nodes -keyout "$certs/ca2.key" -days 2 \
    -subj "/CN=warren test CA 2" -out "$certs/ca2.pem"
ossl req -new -newkey rsa:2048 -nodes -keyout "$certs/renewed.key" -subj "/CN=localhost" \
    -out "$certs/renewed.csr"
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$certs/renewed.ext"
ossl x509 -req -in "$certs/renewed.csr" -CA "$certs/ca2.pem" -CAkey "$certs/ca2.key" \
    -CAcreateserial -days 2 -extfile "$certs/renewed.ext" -out "$certs/renewed.pem"
# The files the executor is given: copies, so that the test can renew them in place.
cp "$stack_tls/server.pem" "$certs/api.pem"
cp "$stack_tls/server.key" "$certs/api.key"
chmod 600 "$certs/api.key"
export WARREN__API__TLS_CERT_FILE=$certs/api.pem WARREN__API__TLS_KEY_FILE=$certs/api.key

# https_code CA PATH [CURL_ARGS...]: the status of a GET over HTTPS to localhost, 000 when the
# connection or the handshake failed (curl's exit status in $TEST_TMP/https.rc).
https_code() {
    local ca=$1 path=$2 rc=0
    shift 2
    curl -sS --max-time 10 -o "$TEST_TMP/https.body" -w '%{http_code}' --cacert "$ca" "$@" \
        "https://localhost:$port$path" 2>"$TEST_TMP/https.err" >"$TEST_TMP/https.code" || rc=$?
    echo "$rc" >"$TEST_TMP/https.rc"
    cat "$TEST_TMP/https.code"
}

log "HTTPS with the stack's CA"
api_start ex
port=$(http_port ex)
grep '"msg":"http listening"' "$(bg_log ex)" | grep -q '"tls":"on"' || fail "the listen line does not say tls on"
assert_eq 200 "$(https_code "$stack_tls/ca.pem" /livez)" "GET /livez over HTTPS"
assert_eq 200 "$(https_code "$stack_tls/ca.pem" "/api/v1/executions?limit=1" -H "Authorization: Bearer $API_READ_KEY")" \
    "an API read over HTTPS"
jq -e '.executions | type == "array"' "$TEST_TMP/https.body" >/dev/null || fail "not a list: $(head -c 300 "$TEST_TMP/https.body")"

log "another CA, plain HTTP, old protocol versions: refused, and the server goes on"
assert_eq 000 "$(https_code "$certs/ca2.pem" /livez)" "a client that trusts another CA"
assert_eq 60 "$(cat "$TEST_TMP/https.rc")" "curl's exit status: the peer's certificate could not be verified"
plain=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/livez" 2>/dev/null) || true
[ "$plain" != 200 ] || fail "plain HTTP was answered on the HTTPS port"
assert_eq 200 "$(https_code "$stack_tls/ca.pem" /livez --tlsv1.2 --tls-max 1.2)" "TLS 1.2"
if openssl s_client -connect "127.0.0.1:$port" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' </dev/null \
    >"$TEST_TMP/tls11.out" 2>&1; then
    fail "a TLS 1.1 handshake succeeded: $(grep -m1 Protocol "$TEST_TMP/tls11.out")"
fi
# The server's refusal (alert 70), not the client's own policy.
assert_contains "$(cat "$TEST_TMP/tls11.out")" "alert protocol version"
assert_eq 200 "$(https_code "$stack_tls/ca.pem" /livez)" "still serving"

log "the CLI over HTTPS: WARREN_API_CA, the host name checked, WARREN_API_INSECURE"
# cli_https NAME URL [VAR=VALUE...] -- ARGS...: the CLI over the API, stdout printed; its exit
# status in $TEST_TMP/NAME.rc (rc_of NAME), stderr in $TEST_TMP/NAME.err.
cli_https() {
    local name=$1 url=$2 vars=() rc=0
    shift 2
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    env -u WARREN__DATABASE__URL WARREN_API_URL="$url" WARREN_API_KEY="$API_WRITE_KEY" "${vars[@]}" \
        "$WARREN_BIN" "$@" 2>"$TEST_TMP/$name.err" || rc=$?
    echo "$rc" >"$TEST_TMP/$name.rc"
}
rc_of() { cat "$TEST_TMP/$1.rc"; }
action=$(unique_name tls.act)
forget_executions "$action"
id=$(cli_https submit "https://localhost:$port" WARREN_API_CA="$stack_tls/ca.pem" -- submit "$action")
assert_eq 0 "$(rc_of submit)" "warren submit over HTTPS ($(cat "$TEST_TMP/submit.err"))"
assert_eq "$action" "$(exec_field "$id" action_ref)" "the row the CLI made over HTTPS"
got=$(cli_https get "https://localhost:$port" WARREN_API_CA="$stack_tls/ca.pem" -- get "$id" --json)
assert_eq "$id" "$(jq -r .id <<<"$got")" "warren get over HTTPS"
cli_https dlq "https://localhost:$port" WARREN_API_CA="$stack_tls/ca.pem" -- dlq list --limit 1 >/dev/null
assert_eq 0 "$(rc_of dlq)" "warren dlq list over HTTPS ($(cat "$TEST_TMP/dlq.err"))"
cli_https noca "https://localhost:$port" -- get "$id" >/dev/null
assert_eq 1 "$(rc_of noca)" "the stack's CA is not among the system's"
assert_contains "$(cat "$TEST_TMP/noca.err")" "the API's certificate: unable to get local issuer certificate"
cli_https byip "https://127.0.0.1:$port" WARREN_API_CA="$stack_tls/ca.pem" -- get "$id" >/dev/null
assert_eq 1 "$(rc_of byip)" "a certificate for localhost does not do for 127.0.0.1"
assert_contains "$(cat "$TEST_TMP/byip.err")" "the API's certificate: IP address mismatch"
got=$(cli_https insecure "https://127.0.0.1:$port" WARREN_API_INSECURE=1 -- get "$id" --json)
assert_eq "0|$id" "$(rc_of insecure)|$(jq -r .id <<<"$got")" "WARREN_API_INSECURE=1 skips the check"
assert_contains "$(cat "$TEST_TMP/insecure.err")" "WARREN_API_INSECURE=1: the API's certificate is not verified"
cli_https badca "https://localhost:$port" WARREN_API_CA="$certs/missing.pem" -- get "$id" >/dev/null
assert_eq 1 "$(rc_of badca)" "a CA file that is not there"
assert_contains "$(cat "$TEST_TMP/badca.err")" "WARREN_API_CA $certs/missing.pem"

log "SIGHUP: a renewed certificate (same paths) for new connections"
cp "$certs/renewed.pem" "$certs/api.pem"
cp "$certs/renewed.key" "$certs/api.key"
sighup ex "$EXEC_PID" '"msg":"api TLS files reloaded"' 10
assert_eq 200 "$(https_code "$certs/ca2.pem" /livez)" "the renewed certificate, trusted by its CA"
assert_eq 000 "$(https_code "$stack_tls/ca.pem" /livez)" "the old CA no longer verifies it"
exec_stop "$EXEC_PID" ex

log "mutual TLS: api.tls_client_ca_file"
cp "$stack_tls/server.pem" "$certs/api.pem"
cp "$stack_tls/server.key" "$certs/api.key"
export WARREN__API__TLS_CLIENT_CA_FILE=$stack_tls/ca.pem
api_start ex2
port=$(http_port ex2)
assert_eq 000 "$(https_code "$stack_tls/ca.pem" /livez)" "a client without a certificate"
assert_eq 200 "$(https_code "$stack_tls/ca.pem" /livez --cert "$stack_tls/client.pem" --key "$stack_tls/client.key")" \
    "a client with a certificate of the CA"
exec_stop "$EXEC_PID" ex2
unset WARREN__API__TLS_CLIENT_CA_FILE

log "a key file that is not there: no start, an error naming the key"
RUN_RC=0
WARREN__API__TLS_KEY_FILE=$certs/missing.key timeout 20 "$WARREN_BIN" executor \
    >"$TEST_TMP/bad.out" 2>&1 || RUN_RC=$?
assert_eq 1 "$RUN_RC" "exit status with a missing key file"
assert_contains "$(cat "$TEST_TMP/bad.out")" "api.tls_key_file $certs/missing.key"

log "a worker's http_listen over HTTPS"
unset WARREN__API__TLS_CERT_FILE WARREN__API__TLS_KEY_FILE
worker_env
new_worker w tlsh
WARREN__WORKER__HTTP_LISTEN=127.0.0.1:0 WARREN__WORKER__HTTP_TLS_CERT_FILE=$stack_tls/server.pem \
    WARREN__WORKER__HTTP_TLS_KEY_FILE=$stack_tls/server.key start_worker worker "$w"
port=$(http_port worker health)
assert_eq 200 "$(https_code "$stack_tls/ca.pem" /livez)" "the worker's /livez over HTTPS"
stop_worker worker "$BG_PID"

log "plain HTTP on a non-loopback address: a warning at start"
WARREN__API__LISTEN=0.0.0.0:0 api_start ex3
wait_log ex3 '"msg":"api.listen is not a loopback address and serves plain HTTP' 5
exec_stop "$EXEC_PID" ex3
pass
