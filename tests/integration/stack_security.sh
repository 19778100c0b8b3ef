#!/usr/bin/env bash
# The private stack is private: it listens on loopback only (epmd and Erlang distribution too),
# guest cannot log in, PostgreSQL refuses connections without the password, and the credential
# files are readable by their owner only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

base=$WARREN_STACK_PORT_BASE
pg_dir=$(readlink -f "$WARREN_STACK_DIR/pg")

# --- listeners ---------------------------------------------------------------------------------
# The stack's processes: the postmaster, the node's beam, and whatever holds one of its seven ports
# (epmd). Every socket they listen on, TCP or UDP, must be bound to a loopback address. epmd
# always adds the IPv6 loopback [::1] next to 127.0.0.1; that is as local as 127.0.0.1 is.
stack_pids() {
    head -n 1 "$pg_dir/data/postmaster.pid"
    printf '%s\n' "$(cat "$WARREN_STACK_DIR/rabbit/rabbit.pid")" # no newline of its own
    ss -H -ltnup | awk -v lo="$base" -v hi="$((base + 6))" '{
        n = split($5, a, ":"); port = a[n]
        if (port >= lo && port <= hi) { while (match($0, /pid=[0-9]+/)) {
            print substr($0, RSTART + 4, RLENGTH - 4); $0 = substr($0, RSTART + RLENGTH) } } }'
}

# check_listeners PID...: fail on any socket of these processes bound beyond loopback.
check_listeners() {
    local pid listeners bad
    listeners=$(ss -H -ltnup)
    for pid in "$@"; do
        bad=$(grep -E "pid=$pid," <<<"$listeners" |
            awk '$5 !~ /^127\.0\.0\.1:[0-9]+$/ && $5 !~ /^\[::1\]:[0-9]+$/' || true)
        [ -z "$bad" ] || fail "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) listens beyond loopback:
$bad"
    done
}

# The node's syslog client (a UDP socket) runs after some restarts only: run it for the check.
if [ "$(rmq eval 'whereis(syslog_logger).')" = undefined ]; then
    rmq eval 'application:ensure_all_started(syslog).' >/dev/null
    on_exit "rmq eval 'application:stop(syslog).' >/dev/null"
fi
mapfile -t pids < <(stack_pids | sort -u)
log "stack processes: ${pids[*]}"
[ "${#pids[@]}" -ge 3 ] || fail "expected the postmaster, the node and epmd, found pids: ${pids[*]}"
check_listeners "${pids[@]}"

# The check saw every part: all seven ports listen (AMQPS too), each on 127.0.0.1 (and on nothing
# else).
listeners=$(ss -H -ltnup)
for port in $(seq "$base" "$((base + 6))"); do
    on_port=$(awk -v p=":$port" 'substr($5, length($5) - length(p) + 1) == p { print $5 }' <<<"$listeners" | sort -u)
    assert_contains "$on_port" "127.0.0.1:$port" "port $port (base + $((port - base))) listening on 127.0.0.1"
    while read -r addr; do
        case $addr in 127.0.0.1:* | "[::1]:"*) ;; *) fail "port $port listens on $addr" ;; esac
    done <<<"$on_port"
done

# CLI tools start an Erlang node of their own while they run; it listens on loopback too.
bg_start cli "$WARREN_RABBITMQCTL" eval 'timer:sleep(6000).'
cli_pid() {
    local p
    for p in $(pgrep -f 'timer:sleep\(6000\)'); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = beam.smp ] && ss -H -ltnp | grep -q "pid=$p," && echo "$p"
    done
}
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 30 '[ -n "$(cli_pid)" ]'
# shellcheck disable=SC2046 # one PID a word
check_listeners $(cli_pid)
bg_stop "$BG_PID" 20 || true

# --- RabbitMQ: no guest --------------------------------------------------------------------------
guest_out=$(amqp-declare-queue --url "amqp://guest:guest@127.0.0.1:$WARREN_AMQP_PORT/%2f" \
    -q "$(unique_name guest)" 2>&1) && fail "guest logged in over AMQP"
assert_contains "$guest_out" "ACCESS_REFUSED" "guest over AMQP"
assert_eq 401 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -u guest:guest \
    "$WARREN_MGMT_URL/api/whoami")" "guest on the management API"
users=$(rmq list_users -s)
assert_not_contains "$users" "guest" "guest user"
assert_contains "$users" "$WARREN_RABBIT_USER" "the stack's administrator"
assert_eq "$WARREN_RABBIT_USER" "$(mgmt_get whoami | jq -r .name)" "the administrator logs in"

# --- PostgreSQL: the password or nothing -------------------------------------------------------
: >"$TEST_TMP/no-pgpass"
chmod 600 "$TEST_TMP/no-pgpass"
pg_try() { # pg_try HOST [PASSWORD]: psql as postgres, never prompting
    PGPASSFILE="$TEST_TMP/no-pgpass" PGPASSWORD=${2:-} psql -X -w -At -h "$1" -p "$WARREN_PG_PORT" \
        -U postgres -d warren -c 'select 1' 2>&1
}
for host in 127.0.0.1 "$pg_dir/sock"; do
    out=$(env -u PGPASSWORD PGPASSFILE="$TEST_TMP/no-pgpass" psql -X -w -At -h "$host" \
        -p "$WARREN_PG_PORT" -U postgres -d warren -c 'select 1' 2>&1) &&
        fail "connected to $host without a password: $out"
    assert_contains "$out" "no password supplied" "no password, via $host"
    out=$(pg_try "$host" wrong-password) && fail "connected to $host with a wrong password"
    assert_contains "$out" "password authentication failed" "wrong password, via $host"
    assert_eq 1 "$(pg_try "$host" "$WARREN_PG_PASSWORD")" "the stack's password, via $host"
done
hba=$(grep -Ev '^[[:space:]]*(#|$)' "$pg_dir/data/pg_hba.conf")
assert_not_contains "$hba" "trust" "pg_hba.conf"
assert_eq "" "$(grep -v scram-sha-256 <<<"$hba" || true)" "pg_hba.conf lines without scram-sha-256"

# --- credential files ----------------------------------------------------------------------------
secrets=$WARREN_STACK_DIR/secrets
assert_eq 700 "$(stat -c %a "$secrets")" "mode of $secrets"
for f in pg_password rabbit_user rabbit_password pgpass netrc rabbitmqadmin.conf; do
    [ -f "$secrets/$f" ] || fail "missing $secrets/$f"
done
for f in "$secrets"/* "$WARREN_STACK_DIR/rabbit/etc/rabbitmq.conf"; do
    assert_eq 600 "$(stat -c %a "$f")" "mode of $f"
    assert_eq "$(id -u)" "$(stat -c %u "$f")" "owner of $f"
done
# The stack's TLS keys (its CA's among them) are private too.
tls_dir=$WARREN_STACK_DIR/tls
assert_eq 700 "$(stat -c %a "$tls_dir")" "mode of $tls_dir"
for f in ca.key server.key client.key; do
    assert_eq 600 "$(stat -c %a "$tls_dir/$f")" "mode of $tls_dir/$f"
    assert_eq "$(id -u)" "$(stat -c %u "$tls_dir/$f")" "owner of $tls_dir/$f"
done
cookie=$WARREN_STACK_DIR/rabbit/home/.erlang.cookie
case $(stat -c %a "$cookie") in 400 | 600) ;; *) fail "mode of $cookie: $(stat -c %a "$cookie")" ;; esac

# `scripts/stack env` exports the same credentials the files hold.
assert_eq "$WARREN_PG_PASSWORD" "$(cat "$secrets/pg_password")" "exported PostgreSQL password"
assert_eq "$WARREN_RABBIT_PASSWORD" "$(cat "$secrets/rabbit_password")" "exported broker password"
assert_contains "$WARREN__DATABASE__URL" ":$WARREN_PG_PASSWORD@" "database URL"
assert_contains "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" "$WARREN_RABBIT_USER:$WARREN_RABBIT_PASSWORD@" "AMQP URL"

# No password anywhere else in the stack's text files (wrappers, env.sh, logs, configuration).
for secret in "$WARREN_PG_PASSWORD" "$WARREN_RABBIT_PASSWORD"; do
    leaks=$(grep -rIlF -- "$secret" "$WARREN_STACK_DIR" "$pg_dir" 2>/dev/null |
        grep -vxF -e "$secrets/pg_password" -e "$secrets/rabbit_password" -e "$secrets/pgpass" \
            -e "$secrets/netrc" -e "$secrets/rabbitmqadmin.conf" \
            -e "$WARREN_STACK_DIR/rabbit/etc/rabbitmq.conf" || true)
    [ -z "$leaks" ] || fail "a password is written in: $leaks"
done
pass
