#!/usr/bin/env bash
# warren migrate: applies schema/ in order and records it, is a no-op the second time, rolls a
# failing file back whole and names it, refuses a changed applied file, serialises concurrent
# runs; and the schema's CHECKs, triggers and dedup key hold.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

unset WARREN_SCHEMA_DIR WARREN_CONFIG
ADMIN_URL=$WARREN__DATABASE__URL

# use_fresh_db NAME: point WARREN__DATABASE__URL at a new database of the test's own, so no
# other test's rows or migrations meet ours; dropped at exit.
use_fresh_db() {
    local db="it_migrate_$1_$$_$RANDOM"
    psql -X -q -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "CREATE DATABASE $db" >/dev/null
    on_exit "psql -X -q '$ADMIN_URL' -c 'DROP DATABASE IF EXISTS $db WITH (FORCE)' >/dev/null"
    export WARREN__DATABASE__URL="${ADMIN_URL%/*}/$db"
}

# migrate ARGS...: run `warren migrate`, output in $OUT, exit status in $RC.
migrate() {
    RC=0
    OUT=$("$WARREN_BIN" migrate "$@" 2>&1) || RC=$?
}

# psql_fails SQL: the statement must be rejected; prints the server's message.
psql_fails() {
    local out
    if out=$(psql_q "$1" 2>&1); then fail "statement accepted: $1"; fi
    printf '%s' "$out"
}

use_fresh_db main
SCHEMA="$WARREN_SOURCE_DIR/schema"
mapfile -t FILES < <(cd "$SCHEMA" && ls [0-9]*_*.sql)
[ "${#FILES[@]}" -ge 2 ] || fail "expected the schema files in $SCHEMA"

log "first run applies every file, in order"
migrate
assert_eq 0 "$RC" "first migrate: $OUT"
for f in "${FILES[@]}"; do assert_contains "$OUT" "applied $f" "first migrate"; done
# The build tree's binary reads build/schema, its link to the checkout's schema/ (paths.h).
assert_contains "$OUT" "applied ${#FILES[@]} migrations from $WARREN_BUILD_DIR/schema"
assert_eq "$SCHEMA" "$(readlink -f "$WARREN_BUILD_DIR/schema")" "build/schema is the checkout's"
assert_eq "${#FILES[@]}" "$(psql_q 'SELECT count(*) FROM warren_migrations')" "recorded migrations"
assert_eq "${FILES[0]}" "$(psql_q "SELECT filename FROM warren_migrations ORDER BY version LIMIT 1")"
assert_eq "$(sha256sum "$SCHEMA/${FILES[0]}" | cut -d' ' -f1)" \
    "$(psql_q "SELECT checksum FROM warren_migrations ORDER BY version LIMIT 1")" "checksum is sha256 of the file"
for t in executions workers dead_letters execution_events; do
    assert_eq "$t" "$(psql_q "SELECT to_regclass('$t')")" "table $t"
done
RECORDED=$(psql_q "SELECT string_agg(version || ' ' || applied_at, ',' ORDER BY version) FROM warren_migrations")

log "second run changes nothing"
migrate
assert_eq 0 "$RC" "second migrate: $OUT"
assert_contains "$OUT" "nothing to apply"
assert_not_contains "$OUT" "applied "
assert_eq "$RECORDED" "$(psql_q "SELECT string_agg(version || ' ' || applied_at, ',' ORDER BY version) FROM warren_migrations")" \
    "warren_migrations after the no-op run"

migrate --status
assert_eq 0 "$RC" "status: $OUT"
assert_contains "$OUT" "${FILES[0]}"
assert_contains "$OUT" "0 pending"
assert_eq 0 "$(grep -c '\.sql  *pending$' <<<"$OUT" || true)" "no file pending: $OUT"

log "a failing file is rolled back whole and named with its statement"
BAD_DIR="$TEST_TMP/schema-bad"
mkdir "$BAD_DIR"
cp "$SCHEMA"/*.sql "$BAD_DIR"/
cat >"$BAD_DIR/999_bad.sql" <<'EOF'
-- a valid statement first, then one that does not parse
CREATE TABLE it_bad_probe (id int);
INSERT INTO it_bad_probe VALUES (1);
CREATE TABEL it_oops (id int);
EOF
WARREN_SCHEMA_DIR=$BAD_DIR migrate
assert_eq 1 "$RC" "broken migration exit status: $OUT"
assert_contains "$OUT" "$BAD_DIR/999_bad.sql:4:" "file and line"
# shellcheck disable=SC2016 # backquotes quote a command in the text
assert_contains "$OUT" 'statement `CREATE TABEL it_oops (id int)` (line 4)' "statement"
assert_contains "$OUT" "SQLSTATE 42601"
assert_eq "" "$(psql_q "SELECT to_regclass('it_bad_probe')")" "the valid statement's table must be rolled back"
assert_eq 0 "$(psql_q "SELECT count(*) FROM warren_migrations WHERE version = '999'")" "no record of the failed file"
assert_eq "${#FILES[@]}" "$(psql_q 'SELECT count(*) FROM warren_migrations')"

WARREN_SCHEMA_DIR=$BAD_DIR migrate --status
assert_eq 0 "$RC" "status with a pending file: $OUT"
assert_contains "$OUT" "999_bad.sql"
assert_contains "$OUT" "1 pending"

log "an execution-time error (a CHECK) names the statement's line; earlier rows roll back"
cat >"$BAD_DIR/999_bad.sql" <<'EOF'
INSERT INTO workers (id, capacity, heartbeat_interval_s) VALUES ('it-ok', 1, 5);

INSERT INTO workers (id, capacity, heartbeat_interval_s)
VALUES ('not a/valid name', 1, 5);
EOF
WARREN_SCHEMA_DIR=$BAD_DIR migrate
assert_eq 1 "$RC" "check violation exit status: $OUT"
assert_contains "$OUT" "999_bad.sql:3:"
assert_contains "$OUT" "workers_id_check"
assert_eq 0 "$(psql_q "SELECT count(*) FROM workers")" "the first insert must be rolled back"

log "transaction control inside a file is refused before anything runs"
printf 'CREATE TABLE it_txn_probe (id int);\nCOMMIT;\n' >"$BAD_DIR/999_bad.sql"
WARREN_SCHEMA_DIR=$BAD_DIR migrate
assert_eq 1 "$RC" "transaction control: $OUT"
assert_contains "$OUT" "999_bad.sql:2: transaction control"
assert_eq "" "$(psql_q "SELECT to_regclass('it_txn_probe')")"

log "an applied file that changed is an error naming it"
rm "$BAD_DIR/999_bad.sql"
echo "-- edited after it was applied" >>"$BAD_DIR/${FILES[0]}"
WARREN_SCHEMA_DIR=$BAD_DIR migrate
assert_eq 1 "$RC" "changed file: $OUT"
assert_contains "$OUT" "$BAD_DIR/${FILES[0]} was changed after it was applied"
WARREN_SCHEMA_DIR=$BAD_DIR migrate --status
assert_eq 1 "$RC" "status with a changed file: $OUT"
assert_contains "$OUT" "CHANGED since applied"

log "usage and connection errors"
migrate --bogus
assert_eq 2 "$RC" "unknown option: $OUT"
migrate --help
assert_eq 0 "$RC" "--help"
assert_contains "$OUT" "usage: warren migrate"
mkdir "$TEST_TMP/empty"
migrate --dir "$TEST_TMP/empty"
assert_eq 1 "$RC" "a directory without migrations: $OUT"
assert_contains "$OUT" "no migrations (NNN_name.sql) in $TEST_TMP/empty"
RC=0
OUT=$(WARREN__DATABASE__URL="postgresql://postgres@127.0.0.1:1/none" "$WARREN_BIN" migrate 2>&1) || RC=$?
assert_eq 1 "$RC" "unreachable database: $OUT"
assert_contains "$OUT" "cannot connect to PostgreSQL"

log "the schema's constraints and triggers"
msg=$(psql_fails "INSERT INTO executions (action_ref, status) VALUES ('echo', 'bogus')")
assert_contains "$msg" "executions_status_check"
id=$(psql_q "INSERT INTO executions (action_ref, params) VALUES ('echo', '{\"n\": 1}') RETURNING id")
psql_q "UPDATE executions SET status = 'running', worker = 'w1' WHERE id = $id AND status = 'requested'"
psql_q "UPDATE executions SET status = 'completed', result = '{}' WHERE id = $id AND status = 'running'"
assert_eq "t" "$(psql_q "SELECT ended_at IS NOT NULL AND updated_at >= created_at FROM executions WHERE id = $id")" \
    "terminal status stamps ended_at"
assert_eq "requested,running,completed" \
    "$(psql_q "SELECT string_agg(to_status, ',' ORDER BY seq) FROM execution_history WHERE execution_id = $id")" \
    "history of the execution"
msg=$(psql_fails "INSERT INTO workers (id, capacity, heartbeat_interval_s, status) VALUES ('w1', 2, 5, 'zombie')")
assert_contains "$msg" "workers_status_check"
psql_q "INSERT INTO dead_letters (dedup_key, reason, body) VALUES ('m1/q/expired/1/0', 'expired', '\\x00ff')"
psql_q "INSERT INTO dead_letters (dedup_key, reason, body) VALUES ('m1/q/expired/1/0', 'expired', '\\x00ff')
        ON CONFLICT (dedup_key) DO NOTHING"
assert_eq 1 "$(psql_q "SELECT count(*) FROM dead_letters")" "a redelivered dead letter is not inserted twice"
assert_eq "pending|\\x00ff" "$(psql_q "SELECT resolution, body FROM dead_letters")"
msg=$(psql_fails "UPDATE dead_letters SET resolution = 'bogus'")
assert_contains "$msg" "dead_letters_resolution_check"
psql_q "UPDATE dead_letters SET resolution = 'permanent_failure', resolved_by = 'it'"
assert_eq "t" "$(psql_q "SELECT resolved_at IS NOT NULL FROM dead_letters")" "resolving stamps resolved_at"

log "two migrators at once: one waits for the other, each file applied once"
use_fresh_db race
SLOW_DIR="$TEST_TMP/schema-slow"
mkdir "$SLOW_DIR"
cp "$SCHEMA"/*.sql "$SLOW_DIR"/
echo "SELECT pg_sleep(2);" >"$SLOW_DIR/999_slow.sql"
WARREN_SCHEMA_DIR=$SLOW_DIR bg_start mig1 "$WARREN_BIN" migrate
PID1=$BG_PID
wait_until 20 "[ \"\$(psql_q \"SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%pg_sleep(2)%'\")\" = 1 ]"
WARREN_SCHEMA_DIR=$SLOW_DIR migrate # while the first holds the lock and runs 999_slow.sql
assert_eq 0 "$RC" "second concurrent migrate: $OUT"
rc1=0
wait "$PID1" || rc1=$?
assert_eq 0 "$rc1" "first concurrent migrate: $(cat "$(bg_log mig1)")"
both="$OUT
$(cat "$(bg_log mig1)")"
assert_contains "$both" "waiting for another migration run to finish"
assert_eq 1 "$(grep -c 'applied 999_slow.sql' <<<"$both")" "the slow file is applied by exactly one run"
assert_eq "$((${#FILES[@]} + 1))" "$(psql_q 'SELECT count(*) FROM warren_migrations')"

pass
