#!/usr/bin/env bash
# amqps:// against the stack's TLS listener (its own CA, .stack/tls): verified connections work,
# from the CLI, with a client certificate, and for an executor and a worker that complete an
# execution end to end over TLS only; a certificate of another CA, a certificate for another host
# name, a client certificate of another CA, a plain port and broken TLS settings are refused with
# errors that say why; a peer that never answers the handshake cannot hold a connect past
# connect_timeout_ms.
# shellcheck disable=SC2154 # bad, w are set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
[ -n "${WARREN_AMQPS_URL:-}" ] ||
    fail "the stack has no AMQPS listener: openssl missing? (scripts/deps, then scripts/stack start)"
worker_env
stack_tls=$WARREN_STACK_TLS_DIR
export WARREN__MESSAGE_QUEUE__RABBITMQ__URL=$WARREN_AMQPS_URL
export WARREN__MESSAGE_QUEUE__RABBITMQ__TLS__CA_FILE=$stack_tls/ca.pem
export WARREN__MESSAGE_QUEUE__RABBITMQ__CONNECT_TIMEOUT_MS=3000
tls_env=WARREN__MESSAGE_QUEUE__RABBITMQ__TLS__

# --- certificates of the test's own -----------------------------------------------------------
certs=$TEST_TMP/certs
mkdir -p "$certs"
ossl() { openssl "$@" 2>>"$certs/openssl.log" || fail "openssl $1: $(tail -n 5 "$certs/openssl.log")"; }
# A CA the broker never heard of, and a client certificate it signed.
ossl req -x509 -new -newkey rsa:2048 -nodes -keyout "$certs/wrong-ca.key" -days 2 \
    -subj "/CN=not the stack's CA" -out "$certs/wrong-ca.pem"
# issue NAME CA EXTENSIONS: NAME.key and NAME.pem signed by CA (CA.pem, CA.key).
issue() {
    ossl req -new -newkey rsa:2048 -nodes -keyout "$certs/$1.key" -subj "/CN=$1" -out "$certs/$1.csr"
    printf '%s\n' "$3" >"$certs/$1.ext"
    ossl x509 -req -in "$certs/$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
        -extfile "$certs/$1.ext" -out "$certs/$1.pem"
}
issue stranger "$certs/wrong-ca" 'extendedKeyUsage=clientAuth'
# A server certificate of the stack's own CA, but for another host name.
issue elsewhere "$stack_tls/ca" $'subjectAltName=DNS:broker.invalid\nextendedKeyUsage=serverAuth'

# peer NAME [CERT KEY]: a server on a free port of 127.0.0.1 (PEER_PORT) that completes TLS
# handshakes with CERT and KEY, or, without them, accepts connections and never says a word.
peer() {
    bg_start "$1" /usr/bin/python3 -c '
import socket, ssl, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
if len(sys.argv) < 3:
    time.sleep(600)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
while True:
    c, _ = s.accept()
    try:
        ctx.wrap_socket(c, server_side=True).close()
    except (OSError, ssl.SSLError):
        c.close()' "${@:2}"
    wait_log "$1" '^[0-9]+$' 10
    PEER_PORT=$(head -n 1 "$(bg_log "$1")")
}

# declare NAME [VAR=VALUE...]: `warren topology declare` with these settings (run_warren NAME).
declare_with() {
    local name=$1; shift
    RUN_RC=0
    env "$@" "$WARREN_BIN" topology declare >"$TEST_TMP/$name.out" 2>"$TEST_TMP/$name.err" || RUN_RC=$?
    RUN_ERR=$(cat "$TEST_TMP/$name.err")
}
# refused NAME PART [VAR=VALUE...]: the declare fails (exit 1) and its error contains PART.
refused() {
    local name=$1 part=$2; shift 2
    declare_with "$name" "$@"
    assert_eq 1 "$RUN_RC" "$name: exit status ($RUN_ERR)"
    assert_contains "$RUN_ERR" "$part" "$name: error"
    assert_not_contains "$RUN_ERR" "$WARREN_RABBIT_PASSWORD" "$name: error"
}

# --- verified connections ----------------------------------------------------------------------
declare_with good
assert_eq 0 "$RUN_RC" "declare over amqps ($RUN_ERR)"
assert_contains "$RUN_ERR" '"tls":"verified"' "the connection's log line"
declare_with client-cert "${tls_env}CERT_FILE=$stack_tls/client.pem" "${tls_env}KEY_FILE=$stack_tls/client.key"
assert_eq 0 "$RUN_RC" "declare with a client certificate of the stack's CA ($RUN_ERR)"

# --- refused: the broker's identity ------------------------------------------------------------
refused wrong-ca "is not trusted: it does not verify against the CAs in message_queue.rabbitmq.tls.ca_file '$certs/wrong-ca.pem'" \
    "${tls_env}CA_FILE=$certs/wrong-ca.pem"
# The listener's certificate names localhost only: 127.0.0.1 is another host name to it.
ip_url=${WARREN_AMQPS_URL/@localhost:/@127.0.0.1:}
refused wrong-host "does not name the host '127.0.0.1' (message_queue.rabbitmq.tls.verify_hostname)" \
    "WARREN__MESSAGE_QUEUE__RABBITMQ__URL=$ip_url"
# A TLS server with a certificate of the right CA for broker.invalid, reached as localhost.
peer elsewhere "$certs/elsewhere.pem" "$certs/elsewhere.key"
refused wrong-san "does not name the host 'localhost'" \
    "WARREN__MESSAGE_QUEUE__RABBITMQ__URL=amqps://u:p@localhost:$PEER_PORT/%2f"
# Switching the checks off is possible, and says so.
declare_with no-hostname-check "WARREN__MESSAGE_QUEUE__RABBITMQ__URL=$ip_url" "${tls_env}VERIFY_HOSTNAME=false"
assert_eq 0 "$RUN_RC" "verify_hostname = false ($RUN_ERR)"
assert_contains "$RUN_ERR" '"tls":"unverified"' "an unverified connection's log line"
assert_contains "$RUN_ERR" '"level":"warn"' "an unverified connection's log line"

# --- refused: our side -------------------------------------------------------------------------
# The broker checks a client certificate it is shown: one of another CA ends the session (in the
# handshake, or right after it under TLS 1.3).
refused stranger "TLS" "${tls_env}CERT_FILE=$certs/stranger.pem" "${tls_env}KEY_FILE=$certs/stranger.key"
assert_contains "$RUN_ERR" "localhost:$WARREN_AMQPS_PORT" "stranger: error names the broker"
refused plain-port "TLS handshake with localhost:$WARREN_AMQP_PORT failed: not a TLS port" \
    "WARREN__MESSAGE_QUEUE__RABBITMQ__URL=amqps://u:p@localhost:$WARREN_AMQP_PORT/%2f"
refused no-ca-file "message_queue.rabbitmq.tls.ca_file '$certs/missing.pem': No such file or directory" \
    "${tls_env}CA_FILE=$certs/missing.pem"
refused ca-not-pem "message_queue.rabbitmq.tls.ca_file '$certs/openssl.log' holds no PEM certificate" \
    "${tls_env}CA_FILE=$certs/openssl.log"
refused cert-no-key "message_queue.rabbitmq.tls.cert_file is set but message_queue.rabbitmq.tls.key_file is empty" \
    "${tls_env}CERT_FILE=$stack_tls/client.pem"
refused key-mismatch "cannot be used: not PEM, or the key does not belong to the certificate" \
    "${tls_env}CERT_FILE=$stack_tls/client.pem" "${tls_env}KEY_FILE=$certs/stranger.key"
ossl pkey -in "$stack_tls/client.key" -aes256 -passout pass:secret -out "$certs/encrypted.key"
refused encrypted-key "key_file '$certs/encrypted.key' is encrypted" \
    "${tls_env}CERT_FILE=$stack_tls/client.pem" "${tls_env}KEY_FILE=$certs/encrypted.key"

# A peer that accepts TCP and never answers the ClientHello: the connect ends with the timeout.
peer silent
started=$SECONDS
refused silent "connect localhost:$PEER_PORT: no TLS session within message_queue.rabbitmq.connect_timeout_ms" \
    "WARREN__MESSAGE_QUEUE__RABBITMQ__URL=amqps://u:p@localhost:$PEER_PORT/%2f" \
    WARREN__MESSAGE_QUEUE__RABBITMQ__CONNECT_TIMEOUT_MS=1000
[ $((SECONDS - started)) -le 5 ] || fail "a silent TLS peer held the connect for $((SECONDS - started)) s"

# Daemons: settings no connect can succeed with stop the worker at start; the executor stops at
# its first connect, as for any broker it cannot reach.
new_worker bad tls-bad
RUN_RC=0
env "${tls_env}CA_FILE=$certs/missing.pem" timeout 20 "$WARREN_BIN" worker --name "$bad" \
    >"$TEST_TMP/bad-worker.log" 2>&1 || RUN_RC=$?
assert_eq 1 "$RUN_RC" "worker with a missing CA file: exit status"
assert_contains "$(cat "$TEST_TMP/bad-worker.log")" "worker cannot start"
assert_contains "$(cat "$TEST_TMP/bad-worker.log")" "tls.ca_file '$certs/missing.pem': No such file"
"$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"
RUN_RC=0
env "${tls_env}CA_FILE=$certs/wrong-ca.pem" timeout 20 "$WARREN_BIN" executor \
    >"$TEST_TMP/bad-executor.log" 2>&1 || RUN_RC=$?
assert_eq 1 "$RUN_RC" "executor trusting another CA: exit status"
assert_contains "$(cat "$TEST_TMP/bad-executor.log")" "is not trusted"

# --- end to end over TLS -----------------------------------------------------------------------
exec_start ex
new_worker w tls
start_worker worker "$w"
on_exit "psql_q \"update executions set status = 'cancelled' where pinned_worker = '$w'
    and status in ('requested', 'scheduled', 'running', 'canceling')\" >/dev/null 2>&1"
id=$(new_execution core.echo "$w" '{"over": "tls"}')
# Params and result of 300 KB: messages that span many TLS records, each way.
big_id=$(psql_q "insert into executions (action_ref, pinned_worker, params)
                 values ('core.echo', '$w', jsonb_build_object('big', repeat('x', 300000))) returning id")
wait_until 30 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq '{"over": "tls"}' "$(exec_field "$id" result)" "result of the execution"
assert_eq "$w|1" "$(exec_field "$id" "worker, attempt")" "worker and attempt"
wait_until 30 "[ \"\$(exec_field $big_id status)\" = completed ]"
assert_eq "300000" "$(exec_field "$big_id" "length(result->>'big')")" "the large result"
# Every connection of the executor and the worker (named warren-worker/ID) is a TLS one (the
# management API lists them within its statistics interval).
# shellcheck disable=SC2317 # called in wait_until's condition
tls_conns() {
    mgmt_get connections | jq -r --arg w "warren-worker/$w" '[.[] | select(.client_properties.connection_name as $n
        | $n == "warren-executor" or $n == $w) | "\(.client_properties.connection_name) \(.ssl)"]
        | sort | unique | join(",")'
}
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(tls_conns)" = "warren-executor true,warren-worker/'"$w"' true" ]'
stop_worker worker "$BG_PID"
exec_stop "$EXEC_PID" ex
assert_not_contains "$(cat "$(bg_log ex)" "$(bg_log worker)")" "$WARREN_RABBIT_PASSWORD" "daemon logs"
pass
