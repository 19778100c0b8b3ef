# The private PostgreSQL 15 cluster in .stack/pg/: init, start, stop, the admin connection.
# Sourced by scripts/stack after common.sh.
# shellcheck shell=bash

# .stack/pg is a directory, or a symlink to one in /tmp when the checkout is out of the postgres
# user's reach (e.g. under /root); postgres gets the resolved path either way.
pg_locate() {
    PG_DIR="$STACK_DIR/pg"
    [ -L "$PG_DIR" ] && PG_DIR=$(readlink -f "$PG_DIR")
    PG_DATA="$PG_DIR/data"
    PG_SOCK="$PG_DIR/sock"
    PG_LOG="$PG_DIR/postgres.log"
}
pg_locate

# As root the cluster belongs to postgres, which must be able to reach it.
pg_choose_dir() {
    [ -e "$STACK_DIR/pg" ] || [ -L "$STACK_DIR/pg" ] && return 0
    [ "$(id -u)" = 0 ] || return 0
    runuser -u postgres -- test -x "$STACK_DIR" && return 0
    local alt; alt=$(mktemp -d /tmp/warren-stack-pg.XXXXXX)
    ln -s "$alt" "$STACK_DIR/pg"
    say "postgres cannot reach $STACK_DIR; the cluster lives in $alt"
    pg_locate
}

pg_bindir() {
    local d
    for d in "${WARREN_PG_BINDIR:-}" /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
        [ -n "$d" ] && [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    die "PostgreSQL server binaries not found (apt-get install postgresql, or run scripts/deps)"
}

# initdb and pg_ctl refuse to run as root; the cluster belongs to postgres then.
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_running() {
    [ -f "$PG_DATA/PG_VERSION" ] && as_pg "$(pg_bindir)/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

pg_pid() { head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || true; }

psql_admin() {
    PGPASSFILE="$SECRETS_DIR/pgpass" psql -X -q -At -w -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" \
        -U postgres "$@"
}

# pg_file PATH: stdin into a file of the cluster, owned by its owner (postgres when run as root).
pg_file() {
    (umask 077 && as_pg tee "$1" >/dev/null)
}

# Password logins only, TCP on 127.0.0.1 and the socket alike.
pg_write_hba() {
    pg_file "$PG_DATA/pg_hba.conf" <<'EOF'
# Written by scripts/stack: every connection needs the password in .stack/secrets/pg_password.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
EOF
}

# A cluster made by an older scripts/stack trusts every local connection. It gets the password and
# password-only authentication, through single-user mode so it never listens while it trusts.
pg_upgrade_auth() {
    grep -Eq '^[^#]*[[:space:]]trust([[:space:]]|$)' "$PG_DATA/pg_hba.conf" || return 0
    say "upgrading the PostgreSQL cluster of an older scripts/stack: password for postgres, scram-sha-256"
    pg_stop fast
    { echo "SET password_encryption = 'scram-sha-256';"
      echo "ALTER ROLE postgres PASSWORD '$(secret pg_password)';"; } |
        as_pg "$(pg_bindir)/postgres" --single -D "$PG_DATA" postgres >"$PG_DIR/upgrade.log" 2>&1 ||
        { show_log "$PG_DIR/upgrade.log"; die "could not set the postgres password"; }
    pg_write_hba
}

pg_init() {
    [ -f "$PG_DATA/PG_VERSION" ] && return 0
    mkdir -p "$STACK_DIR"
    pg_choose_dir
    mkdir -p "$PG_DIR"
    rm -rf "$PG_DATA"
    mkdir -p "$PG_DATA" "$PG_SOCK"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$PG_DIR"
    chmod 700 "$PG_DATA"
    # The password reaches initdb in a file of the cluster's owner, removed right after.
    local pwfile="$PG_DIR/initdb.pw" rc=0
    secret pg_password | pg_file "$pwfile"
    as_pg "$(pg_bindir)/initdb" -D "$PG_DATA" -U postgres -A scram-sha-256 --pwfile="$pwfile" \
        -E UTF8 --locale=C.UTF-8 -N >"$PG_DIR/initdb.log" 2>&1 || rc=$?
    rm -f "$pwfile"
    [ "$rc" = 0 ] || { show_log "$PG_DIR/initdb.log"; die "initdb failed"; }
    pg_write_hba
}

pg_start() {
    secrets_init
    [ ! -f "$PG_DATA/PG_VERSION" ] || pg_upgrade_auth
    if pg_running; then
        say "postgres already running (pid $(pg_pid), port $PG_PORT)"
    else
        port_free "$PG_PORT" || die "port $PG_PORT (postgres) is taken by another process; pick another WARREN_STACK_PORT_BASE"
        pg_init
        local opts="-p $PG_PORT -k $PG_SOCK -c listen_addresses=127.0.0.1"
        opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        # The lock fd must not leak into the postmaster, or the lock lives as long as it does.
        as_pg "$(pg_bindir)/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$TIMEOUT" -o "$opts" start \
            >/dev/null 9>&- || { show_log "$PG_LOG"; die "postgres did not start"; }
    fi
    local deadline=$((SECONDS + TIMEOUT))
    local out
    until out=$(psql_admin -d postgres -c 'select 1' 2>&1); do
        case $out in *"password authentication failed"*)
            die "postgres refuses the password in $SECRETS_DIR/pg_password (replaced or lost?); scripts/stack clean starts over" ;;
        esac
        [ $SECONDS -lt $deadline ] || { show_log "$PG_LOG"; die "postgres does not answer on port $PG_PORT: $out"; }
        sleep 0.2
    done
    # One statement per -c: CREATE DATABASE cannot run inside the implicit transaction.
    if [ "$(psql_admin -d postgres -c "select 1 from pg_database where datname = 'warren'")" != 1 ]; then
        psql_admin -d postgres -c 'create database warren' || die "could not create database warren"
    fi
    say "postgres up: port $PG_PORT, database warren"
}

pg_stop() {
    local mode=${1:-fast}
    case "$mode" in fast|immediate|smart) ;; *) die "pg-stop mode must be fast, immediate or smart";; esac
    if pg_running; then
        as_pg "$(pg_bindir)/pg_ctl" -D "$PG_DATA" -m "$mode" -w -t "$TIMEOUT" stop >/dev/null ||
            die "pg_ctl stop failed"
        say "postgres stopped"
    fi
}
