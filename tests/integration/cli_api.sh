#!/usr/bin/env bash
# The CLI over the API (WARREN_API_URL, WARREN_API_KEY): submit (also --params-file beyond the
# kernel's 128 KiB argument limit, from a file and from stdin), get, list, workers and cancel
# work without database credentials, and --json prints the same bytes as on the database URL.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
action=$(unique_name act)
forget_executions "$action"
api_start ex
export WARREN__LOG__LEVEL=warn
db_url=$WARREN__DATABASE__URL
# over the API: no database URL at all, so nothing can fall back to it
viaapi() { env -u WARREN__DATABASE__URL WARREN_API_URL="$API" WARREN_API_KEY="${KEY:-$API_WRITE_KEY}" "$WARREN_BIN" "$@"; }
viadb() { env -u WARREN_API_URL WARREN__DATABASE__URL="$db_url" "$WARREN_BIN" "$@"; }

log "submit, get, cancel over the API"
id=$(viaapi submit "$action" --params '{"a": 1}')
[[ $id =~ ^[0-9]+$ ]] || fail "submit printed '$id'"
assert_eq "$action|1|ops" "$(exec_field "$id" "action_ref, params->>'a', submitted_by")" "row"
assert_eq "$(viadb get "$id" --json)" "$(viaapi get "$id" --json)" "get --json the same either way"
viaapi get "$id" >"$TEST_TMP/get.txt"
assert_contains "$(cat "$TEST_TMP/get.txt")" "execution $id"
assert_contains "$(cat "$TEST_TMP/get.txt")" "history (1)"
row=$(viaapi submit "$action" --json --worker "$(unique_name p)" --timeout 9)
assert_eq "$action|9|requested" "$(jq -r '"\(.action_ref)|\(.timeout_s)|\(.status)"' <<<"$row")" "submit --json"
assert_eq "execution $id: cancelled" "$(viaapi cancel "$id")" "cancel"
assert_eq "cancelled|ops" "$(exec_field "$id" "status, cancelled_by")" "cancelled by the key's name"
rc=0
viaapi cancel "$id" 2>"$TEST_TMP/err" || rc=$?
assert_eq 1 "$rc" "cancel of a cancelled one"
assert_contains "$(cat "$TEST_TMP/err")" "(HTTP 409 conflict)"

log "list and workers: the same --json either way"
assert_eq "$(viadb list --json -n 7)" "$(viaapi list --json -n 7)" "list --json"
assert_eq "$(viadb list --json --status cancelled -n 3)" "$(viaapi list --json --status cancelled -n 3)" \
    "list --json --status"
viaapi list -n 3 | head -1 | grep -q '^ID ' || fail "list table"
viaapi workers --json | jq -e 'type == "array"' >/dev/null || fail "workers --json"
viaapi workers >/dev/null

log "--params-file beyond 128 KiB, from a file and from stdin"
jq -cn '{blob: ("x" * 200000), n: 7}' >"$TEST_TMP/params.json"
big=$(viaapi submit "$action" --params-file "$TEST_TMP/params.json")
assert_eq "200000|7" "$(exec_field "$big" "length(params->>'blob'), params->>'n'")" "params file over the API"
big2=$(viadb submit "$action" --params-file - <"$TEST_TMP/params.json")
assert_eq "200000|cli:$(id -un)" "$(exec_field "$big2" "length(params->>'blob'), submitted_by")" \
    "params from stdin on the database URL"
rc=0
viaapi submit "$action" --params '{}' --params-file "$TEST_TMP/params.json" 2>/dev/null || rc=$?
assert_eq 2 "$rc" "--params and --params-file"
echo '[1]' | { viaapi submit "$action" --params-file - 2>/dev/null || rc=$?; }
assert_eq 2 "$rc" "params that are no object"

log "keys: a read key cannot submit; no API: a clear error"
rc=0
KEY=$API_READ_KEY viaapi submit "$action" 2>"$TEST_TMP/err" || rc=$?
assert_eq 1 "$rc" "read key submit"
assert_contains "$(cat "$TEST_TMP/err")" "HTTP 403"
rc=0
env WARREN_API_URL=http://127.0.0.1:1 "$WARREN_BIN" get 1 2>"$TEST_TMP/err" || rc=$?
assert_eq 1 "$rc" "no API"
assert_contains "$(cat "$TEST_TMP/err")" "no answer from the API"

log "submit --wait over the API prints the same final row as on the database URL"
done_id=$(psql_q "insert into executions (action_ref, status, ended_at, result) values ('$action', 'completed', now(), '{\"ok\": 1}') returning id")
assert_eq "$(viadb get "$done_id" --json | jq -cS 'del(.events, .dead_letters)')" \
    "$(viaapi get "$done_id" --json | jq -cS 'del(.events, .dead_letters)')" "final row"
exec_stop "$EXEC_PID" ex
pass
