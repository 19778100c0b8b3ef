#!/usr/bin/env bash
# A database built from scratch and one built by the previous release's schema (c97cb9a, before
# the definitions moved to schema/functions/) and then upgraded end with the same schema:
# `pg_dump --schema-only` of the two, compared. The upgrade also proves that the migrations
# edited since that release are accepted by their superseded checksums (schema/superseded.sha256)
# and that the upgrade applies the definitions again (docs/schema.md).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

unset WARREN_SCHEMA_DIR WARREN_CONFIG
ADMIN_URL=$WARREN__DATABASE__URL
RELEASE=${WARREN_SCHEMA_RELEASE:-c97cb9a}
SCHEMA="$WARREN_SOURCE_DIR/schema"
DEFS=("$SCHEMA"/functions/*.sql)

# new_db NAME: a database of the test's own (dropped at exit); prints its URL.
new_db() {
    local db="it_schema_$1_$$_$RANDOM"
    psql -X -q -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "CREATE DATABASE $db" >/dev/null
    on_exit "psql -X -q '$ADMIN_URL' -c 'DROP DATABASE IF EXISTS $db WITH (FORCE)' >/dev/null"
    printf '%s' "${ADMIN_URL%/*}/$db"
}

# migrate URL ARGS...: `warren migrate` on the database at URL; output in $OUT, status in $RC.
migrate() {
    local url=$1
    shift
    RC=0
    OUT=$(WARREN__DATABASE__URL=$url "$WARREN_BIN" migrate "$@" 2>&1) || RC=$?
}

# schema_of URL: the schema-only dump, without what differs between any two dumps: the random
# key of \restrict / \unrestrict (pg_dump 15.14 and later). Nothing else is normalised: the two
# databases must hold the same objects with the same definitions, and pg_dump orders them by
# kind and name, whatever order they were created in.
schema_of() {
    pg_dump --schema-only --no-owner "$1" | grep -vE '^\\(un)?restrict '
}

OLD="$TEST_TMP/release"
mkdir "$OLD"
git -C "$WARREN_SOURCE_DIR" archive "$RELEASE" schema | tar -x -C "$OLD" ||
    fail "cannot read schema/ of $RELEASE from git (a clone with its history is needed)"
[ ! -e "$OLD/schema/functions" ] || fail "$RELEASE already has schema/functions: pick the release before them"

log "from scratch"
FRESH=$(new_db fresh)
t0=$(date +%s%N)
migrate "$FRESH"
assert_eq 0 "$RC" "fresh migrate: $OUT"
log "fresh migrate took $((($(date +%s%N) - t0) / 1000000)) ms"
assert_contains "$OUT" "re-applied ${#DEFS[@]} definition files"

log "built by $RELEASE's schema (this binary on its directory migrates as that release did)"
UPGRADED=$(new_db upgraded)
migrate "$UPGRADED" --dir "$OLD/schema"
assert_eq 0 "$RC" "migrate $RELEASE: $OUT"
assert_not_contains "$OUT" "definition files"
assert_eq "" "$(psql -X -qAt "$UPGRADED" -c "SELECT to_regclass('warren_definitions')")" \
    "no definitions table from a schema without functions/"
# Rows of every kind the definitions touch, so the upgrade replaces functions and triggers that
# are in use.
psql -X -q -v ON_ERROR_STOP=1 "$UPGRADED" >/dev/null <<'EOF'
INSERT INTO executions (action_ref) VALUES ('echo'), ('echo');
UPDATE executions SET status = 'failed', error = 'it' WHERE id = 2;
INSERT INTO workers (id, capacity, heartbeat_interval_s) VALUES ('it-w', 1, 5);
INSERT INTO dead_letters (dedup_key, reason, body, execution_id) VALUES ('it/1', 'expired', '\x00', 2);
EOF

log "upgraded with this tree"
migrate "$UPGRADED"
assert_eq 0 "$RC" "upgrade: $OUT"
assert_contains "$OUT" "re-applied ${#DEFS[@]} definition files"
# Migrations added since the release are applied by the upgrade, and only those.
added=$(comm -13 <(cd "$OLD/schema" && ls ./*.sql) <(cd "$SCHEMA" && ls ./*.sql) | wc -l)
if [ "$added" -eq 0 ]; then
    assert_contains "$OUT" "no migration to apply"
else
    assert_contains "$OUT" "applied $added migration"
fi
migrate "$UPGRADED"
assert_eq 0 "$RC" "second upgrade run: $OUT"
assert_contains "$OUT" "nothing to apply"
migrate "$UPGRADED" --status
assert_eq 0 "$RC" "status after the upgrade: $OUT"
assert_contains "$OUT" "0 pending"
assert_not_contains "$OUT" "CHANGED"

schema_of "$FRESH" >"$TEST_TMP/fresh.sql"
schema_of "$UPGRADED" >"$TEST_TMP/upgraded.sql"
[ "$(grep -c 'CREATE FUNCTION' "$TEST_TMP/fresh.sql")" -ge 30 ] || fail "the fresh dump holds too few functions"
diff -u "$TEST_TMP/fresh.sql" "$TEST_TMP/upgraded.sql" >&2 ||
    fail "the fresh and the upgraded schema differ (diff above)"
q="SELECT string_agg(filename || ' ' || checksum, ',' ORDER BY filename) FROM warren_definitions"
assert_eq "$(psql -X -qAt "$FRESH" -c "$q")" "$(psql -X -qAt "$UPGRADED" -c "$q")" "definitions recorded"
q="SELECT string_agg(version, ',' ORDER BY version) FROM warren_migrations"
assert_eq "$(psql -X -qAt "$FRESH" -c "$q")" "$(psql -X -qAt "$UPGRADED" -c "$q")" "migrations recorded"

log "the upgraded database works: the history, the dead letter's word and its tallies"
assert_eq "requested,failed" "$(psql -X -qAt "$UPGRADED" -c \
    "SELECT string_agg(to_status, ',' ORDER BY seq) FROM execution_history WHERE execution_id = 2")"
assert_eq "worker_unavailable" "$(psql -X -qAt "$UPGRADED" -c "SELECT investigation_reason FROM dead_letters")"
assert_eq 1 "$(psql -X -qAt "$UPGRADED" -c "SELECT sum(n) FROM dead_letter_tallies")"

log "an applied migration edited without its checksum in superseded.sha256 is still refused"
EDITED="$TEST_TMP/edited"
cp -r "$SCHEMA" "$EDITED"
echo "-- edited after it was applied" >>"$EDITED/020_dead_letter_investigations.sql"
migrate "$UPGRADED" --dir "$EDITED"
assert_eq 1 "$RC" "an unlisted edit: $OUT"
assert_contains "$OUT" "020_dead_letter_investigations.sql was changed after it was applied"

log "a migration applied after the definitions makes the next run apply them again"
NEXT="$TEST_TMP/next"
cp -r "$SCHEMA" "$NEXT"
echo "DROP VIEW dead_letter_counts;" >"$NEXT/999_drop_view.sql"
migrate "$FRESH" --dir "$NEXT"
assert_eq 0 "$RC" "a migration that drops a view: $OUT"
assert_contains "$OUT" "re-applied"
assert_eq "dead_letter_counts" "$(psql -X -qAt "$FRESH" -c "SELECT to_regclass('dead_letter_counts')")" \
    "the view is back"
pass
