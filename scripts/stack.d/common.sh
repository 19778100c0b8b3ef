# The helpers every part of the private stack uses: messages, the port base, the credentials in
# .stack/secrets/, free ports.
# Sourced by scripts/stack (which defines STACK_DIR, DEFAULT_BASE and TIMEOUT) before the others.
# shellcheck shell=bash

SECRETS_DIR="$STACK_DIR/secrets"

say() { printf 'stack: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# show_log FILE: the tail of a log, so a failed start explains itself.
show_log() {
    [ -f "$1" ] || return 0
    say "last lines of $1:"
    tail -n "${2:-40}" "$1" | sed 's/^/    /' >&2
}

# --- port base -------------------------------------------------------------------------------
# A started stack records its base, so later commands (tests under ctest, stop) find the same
# ports without the caller exporting anything. WARREN_STACK_PORT_BASE chooses the base for start;
# every other command acts on the stack that was started (pick_base recorded).
recorded_base() { cat "$STACK_DIR/port_base" 2>/dev/null || true; }

# shellcheck disable=SC2034 # the ports and NODE are for the other parts and the commands
pick_base() {
    local rec; rec=$(recorded_base)
    if [ "${1:-}" = recorded ] && [ -n "$rec" ]; then
        [ -z "${WARREN_STACK_PORT_BASE:-}" ] || [ "$WARREN_STACK_PORT_BASE" = "$rec" ] ||
            say "note: this checkout's stack was started with port base $rec; using it, not WARREN_STACK_PORT_BASE=$WARREN_STACK_PORT_BASE"
        BASE=$rec
    else
        BASE=${WARREN_STACK_PORT_BASE:-${rec:-$DEFAULT_BASE}}
    fi
    { [[ "$BASE" =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65500 ]; } ||
        die "WARREN_STACK_PORT_BASE must be a number between 1024 and 65500, got '$BASE'"
    PG_PORT=$BASE
    AMQP_PORT=$((BASE + 1))
    MGMT_PORT=$((BASE + 2))
    PROM_PORT=$((BASE + 3))
    DIST_PORT=$((BASE + 4))
    EPMD_PORT=$((BASE + 5))
    AMQPS_PORT=$((BASE + 6))
    NODE="warren-$BASE@localhost"
}

# --- credentials -----------------------------------------------------------------------------
# Random credentials, created once per .stack/ and kept across restarts. The files that depend on
# the ports (pgpass, netrc, rabbitmqadmin.conf) are rewritten on every start.
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

secret() {
    [ -s "$SECRETS_DIR/$1" ] || die "no $SECRETS_DIR/$1: the stack was never started by this version (scripts/stack start)"
    cat "$SECRETS_DIR/$1"
}

# secret_file NAME: write stdin to a 0600 file in the secrets directory.
secret_file() {
    (umask 077 && cat >"$SECRETS_DIR/$1.tmp") && mv -f "$SECRETS_DIR/$1.tmp" "$SECRETS_DIR/$1"
}

secrets_init() {
    (umask 077 && mkdir -p "$SECRETS_DIR")
    chmod 700 "$SECRETS_DIR"
    [ -s "$SECRETS_DIR/pg_password" ] || random_hex 24 | secret_file pg_password
    [ -s "$SECRETS_DIR/rabbit_user" ] || echo "warren-admin-$(random_hex 4)" | secret_file rabbit_user
    [ -s "$SECRETS_DIR/rabbit_password" ] || random_hex 24 | secret_file rabbit_password
    local user pass
    user=$(secret rabbit_user) pass=$(secret rabbit_password)
    # libpq ignores a password file that others may read; curl and rabbitmqadmin get theirs too.
    printf '*:%s:*:postgres:%s\n' "$PG_PORT" "$(secret pg_password)" | secret_file pgpass
    printf 'machine 127.0.0.1 login %s password %s\n' "$user" "$pass" | secret_file netrc
    printf '[default]\nhostname = 127.0.0.1\nport = %s\nusername = %s\npassword = %s\n' \
        "$MGMT_PORT" "$user" "$pass" | secret_file rabbitmqadmin.conf
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
