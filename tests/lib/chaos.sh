# Helpers for tests/chaos/*.sh; source after common.sh, topology.sh, executor.sh and worker.sh.
# A chaos run has a database of its own on the private stack (so every row in it is the run's,
# and "none is missing" can be asserted exactly), its own topology (isolate_topology) and
# tests/chaos/chaos.conf.
# shellcheck shell=bash

# The terminal statuses (include/warren/exec_status.h), as an SQL list.
CHAOS_TERMINAL="'completed', 'failed', 'cancelled', 'timeout', 'abandoned'"

# chaos_env: a database of the run's own (migrated; dropped when the test passes, kept for a look
# when it fails), an isolated topology, the chaos configuration and the source tree's handlers.
# The stack is started again at exit, so a test after this one finds it up whatever happened.
chaos_env() {
    local base_url=$WARREN__DATABASE__URL
    CHAOS_DB="warren_chaos_$$_$RANDOM"
    psql_q "create database $CHAOS_DB" >/dev/null
    # The stack's PostgreSQL runs with synchronous_commit off (speed), so an immediate stop loses
    # the commits of its last fraction of a second, completions the executor has acked among
    # them: a database that loses commits, a known limit (docs/reliability.md), not the crash of
    # a durable one that the run is about. The run's database commits synchronously unless
    # CHAOS_SYNCHRONOUS_COMMIT=off asks to see that limit.
    psql_q "alter database $CHAOS_DB set synchronous_commit = ${CHAOS_SYNCHRONOUS_COMMIT:-on}" >/dev/null
    # CHAOS_KEEP=DIR keeps the database and copies the logs to DIR even when the test passes.
    [ -z "${CHAOS_KEEP:-}" ] || on_exit "mkdir -p '$CHAOS_KEEP' && cp -r \"\$TEST_TMP\"/. '$CHAOS_KEEP'/ && echo 'chaos database kept: $CHAOS_DB' >&2"
    on_exit "if [ \"\$_T_PASSED\" = 1 ] && [ -z '${CHAOS_KEEP:-}' ]; then WARREN__DATABASE__URL='$base_url' psql_q 'drop database if exists $CHAOS_DB with (force)' >/dev/null; else echo 'chaos database kept: $CHAOS_DB' >&2; fi"
    on_exit "stack start >/dev/null 2>&1 || true"
    export WARREN__DATABASE__URL="${base_url%/*}/$CHAOS_DB"
    isolate_topology
    export WARREN_CONFIG="$WARREN_SOURCE_DIR/tests/chaos/chaos.conf"
    export WARREN__WORKER__HANDLERS_DIR="$WARREN_SOURCE_DIR/handlers"
    "$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"
}

# chaos_executor NAME: an executor in the background (log NAME), waiting until it runs; sets
# BG_PID. Unlike exec_start it takes its settings from the chaos configuration alone.
chaos_executor() {
    bg_start "$1" "$WARREN_BIN" executor
    wait_log "$1" '"executor started"' 30
}

# chaos_none WHAT SQL: SQL lists offending rows (one a line); fail naming them unless it is empty.
chaos_none() {
    local rows
    rows=$(psql_q "$2")
    [ -z "$rows" ] || fail "$1 ($(wc -l <<<"$rows") rows):
$(head -n 40 <<<"$rows")"
}

# chaos_counts: "status=N ..." over every execution, in status order.
chaos_counts() {
    psql_q "select coalesce(string_agg(status || '=' || n, ' ' order by status), 'none')
            from (select status, count(*) n from executions group by status) c"
}

# chaos_unfinished: the executions not terminal yet, as "id status worker attempt", for messages.
chaos_unfinished() {
    psql_q "select id || ' ' || status || ' ' || coalesce(worker, '-') || ' attempt ' || attempt
            from executions where status not in ($CHAOS_TERMINAL) order by id limit 40"
}
