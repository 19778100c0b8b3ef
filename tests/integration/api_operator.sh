#!/usr/bin/env bash
# The operator's actions (docs/api.md, "Operator actions"): the investigation queue pages open
# records most urgent first at the view's priority; investigate opens a manual record by the
# key's name (409 for one already open or an ended execution); complete ends a failed or a stuck
# (stale) running execution by hand, recorded in its history with who did it, closing its open
# records as manually_resolved, and a second completion or a late worker report changes
# nothing; warren_dead_letters_open counts the open records; 401, 403, 404 and 400 where due;
# `warren dlq queue`, `warren investigate` and `warren complete` over the API and the database.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
fake_worker w op
action=$(unique_name act)
forget_executions "$action"
export WARREN__STALENESS__INTERVAL_S=0 # the detector would end the stuck execution itself
export WARREN__STALENESS__RUNNING_BY_ACTION="$action=3"
api_start ex

# failed ACTION: a failed execution of ACTION at attempt 1; prints its id.
failed() {
    psql_q "insert into executions (action_ref, status, attempt, error, ended_at)
            values ('$1', 'failed', 1, 'handler exited with status 3', now()) returning id"
}
# record EXECUTION REASON AGE: an open record received AGE ago; prints its id.
record() {
    psql_q "insert into dead_letters (dedup_key, execution_id, reason, body, received_at)
            values ('$(unique_name dedup)', $1, '$2', '\\x00', now() - interval '$3')
            returning id"
}
metric() { # NAME LABELS: a sample of the executor's /metrics
    curl -sS "$API/metrics" | awk -v k="$1{$2}" '$1 == k {print $2}'
}

log "investigation queue: most urgent first, pages at one as_of"
ids=()
for reason in parse_error max_retries_exceeded rejected expired; do # weights 5, 4, 3, 2
    for age in "1 minute" "1 hour" "1 day"; do
        ids+=("$(record "$(failed "$action")" "$reason" "$age")")
    done
done
closed=$(record "$(failed "$action")" parse_error "1 hour")
psql_q "update dead_letters set resolution = 'cancelled' where id = $closed" >/dev/null
mine=$(IFS=,; echo "${ids[*]}")
want=$(psql_q "select string_agg(id::text, ',' order by priority desc, id)
               from dead_letter_investigation_queue where id in ($mine)")
expect 401 GET /api/v1/dead-letters/investigation-queue "" -
got=() cursor="" pages=0
while :; do
    expect 200 GET "/api/v1/dead-letters/investigation-queue?limit=5${cursor:+&cursor=$cursor}" "" "$API_READ_KEY"
    while read -r id; do got+=("$id"); done < <(jq -r '.items[].id' <<<"$CALL_BODY")
    jq -e '.items | map(.priority) | . == (sort | reverse)' <<<"$CALL_BODY" >/dev/null ||
        fail "a page is not by priority: $CALL_BODY"
    pages=$((pages + 1))
    cursor=$(jq -r '.next_cursor // empty' <<<"$CALL_BODY")
    [ -n "$cursor" ] || break
    [ "$pages" -lt 10000 ] || fail "the pages do not end"
done
[ "$pages" -ge 3 ] || fail "12 records and more in $pages pages of 5"
seen=$(printf '%s\n' "${got[@]}" | grep -xFf <(tr , '\n' <<<"$mine") | paste -sd,)
assert_eq "$want" "$seen" "the queue's order of this test's records (the view's)"
assert_eq "" "$(printf '%s\n' "${got[@]}" | grep -x "$closed" || true)" "a closed record is not queued"
assert_eq "${#got[@]}" "$(printf '%s\n' "${got[@]}" | sort -u | wc -l)" "no record on two pages"
expect 400 GET "/api/v1/dead-letters/investigation-queue?cursor=c1.1f" "" "$API_READ_KEY"
expect 400 GET "/api/v1/dead-letters/investigation-queue?limit=0" "" "$API_READ_KEY"
expect 400 GET "/api/v1/dead-letters/investigation-queue?reason=x" "" "$API_READ_KEY"

log "investigate: a manual record by the key's name"
f1=$(failed "$action")
expect 401 POST "/api/v1/executions/$f1/investigate" '{"notes":"x"}' -
expect 403 POST "/api/v1/executions/$f1/investigate" '{"notes":"x"}' "$API_READ_KEY"
expect 404 POST /api/v1/executions/999999999/investigate '{"notes":"x"}'
expect 400 POST "/api/v1/executions/$f1/investigate" '{"note":"x"}'
expect 400 POST "/api/v1/executions/$f1/investigate" '{"notes":3}'
assert_eq 0 "$(psql_q "select count(*) from dead_letters where execution_id = $f1")" "no record yet"
expect 201 POST "/api/v1/executions/$f1/investigate" '{"notes":"customer 7 says it went through"}'
rec=$(jq -r .id <<<"$CALL_BODY")
assert_eq "manual|manual|investigating|ops|customer 7 says it went through|ops|failed" \
    "$(psql_q "select reason, investigation_reason, resolution, resolved_by, notes,
                      metadata ->> 'opened_by', investigation -> 'execution' ->> 'status'
               from dead_letters where id = $rec and execution_id = $f1")" "the record"
wait_log ex "\"msg\":\"investigation opened\",\"execution_id\":\"$f1\"" 5
expect 409 POST "/api/v1/executions/$f1/investigate" ''
assert_contains "$CALL_BODY" "already has open record $rec" "the open record named"
assert_eq 1 "$(psql_q "select count(*) from dead_letters where execution_id = $f1")" "still one record"
done_id=$(psql_q "insert into executions (action_ref, status, result, ended_at)
                  values ('$action', 'completed', '{}', now()) returning id")
expect 409 POST "/api/v1/executions/$done_id/investigate" ''
running=$(psql_q "insert into executions (action_ref, status, worker, attempt, started_at)
                  values ('$action-x', 'running', 'nobody', 1, now()) returning id")
forget_executions "$action-x"
expect 201 POST "/api/v1/executions/$running/investigate" ''
assert_eq "investigating|ops|" "$(psql_q "select resolution, resolved_by, notes from dead_letters
                                          where execution_id = $running")" "a running one's record"
# Wherever it ranks (a new record ranks below older ones of the suite): the pages till it.
found="" cursor="" pages=0
while [ -z "$found" ]; do
    expect 200 GET "/api/v1/dead-letters/investigation-queue?limit=1000${cursor:+&cursor=$cursor}" "" "$API_READ_KEY"
    found=$(jq -r --argjson id "$rec" '.items[] | select(.id == $id) | "\(.reason)|\(.resolution)"' <<<"$CALL_BODY")
    cursor=$(jq -r '.next_cursor // empty' <<<"$CALL_BODY")
    pages=$((pages + 1))
    if [ -z "$cursor" ] || [ "$pages" -ge 1000 ]; then break; fi
done
assert_eq "manual|investigating" "$found" "the manual record is queued"

log "the open-records gauges agree with the table"
# shellcheck disable=SC2317 # called only through wait_until
want_open() { psql_q "select count(*) from dead_letters where resolution = '$1'"; }
# shellcheck disable=SC2016 # evaluated later, by wait_until
wait_until 15 '[ "$(metric warren_dead_letters_open "resolution=\"investigating\"")" = "$(want_open investigating)" ] &&
               [ "$(metric warren_dead_letters_open "resolution=\"pending\"")" = "$(want_open pending)" ]'
age=$(metric warren_dead_letters_open_oldest_age_seconds 'resolution="pending"')
oldest=$(psql_q "select extract(epoch from now() - min(received_at))::int from dead_letters where resolution = 'pending'")
awk -v a="$age" -v o="$oldest" 'BEGIN { exit !(a >= 86400 && a <= o + 1 && a >= o - 12) }' ||
    fail "oldest pending age $age, the table's $oldest"

log "complete: a failed execution, by hand"
expect 401 POST "/api/v1/executions/$f1/complete" '{"result":{"ok":true}}' -
expect 403 POST "/api/v1/executions/$f1/complete" '{"result":{"ok":true}}' "$API_READ_KEY"
expect 404 POST /api/v1/executions/999999999/complete '{"result":{"ok":true}}'
expect 400 POST "/api/v1/executions/$f1/complete" '{"notes":"no result"}'
expect 400 POST "/api/v1/executions/$f1/complete" ''
expect 400 POST "/api/v1/executions/$f1/complete" '{"result":1,"attempt":0}'
expect 409 POST "/api/v1/executions/$f1/complete" '{"result":1,"attempt":2}'
assert_contains "$CALL_BODY" "moved on" "the attempt fence"
assert_eq failed "$(exec_field "$f1" status)" "a refused completion changes nothing"
expect 200 POST "/api/v1/executions/$f1/complete" '{"result":{"paid":true},"notes":"confirmed by the bank","attempt":1}'
assert_eq "completed|ops" "$(jq -r '"\(.status)|\(.completed_by)"' <<<"$CALL_BODY")" "the answer"
assert_eq 'completed|{"paid": true}|ops|t' \
    "$(exec_field "$f1" "status, result, completed_by, error is null")" "the row"
assert_eq "failed>completed|completed by hand by ops: confirmed by the bank" \
    "$(psql_q "select from_status || '>' || to_status, note from execution_history
               where execution_id = $f1 order by seq desc limit 1")" "the history row"
assert_eq "manually_resolved|ops|t" \
    "$(psql_q "select resolution, resolved_by, notes like '%completed by hand by ops%'
               from dead_letters where id = $rec")" "its record closed"
expect 409 POST "/api/v1/executions/$f1/complete" '{"result":{"paid":false}}'
assert_contains "$CALL_BODY" "it has completed" "a second completion"
assert_eq '{"paid": true}' "$(exec_field "$f1" result)" "the second changed nothing"
wait_log ex "\"msg\":\"execution completed by hand\",\"execution_id\":\"$f1\"" 5

log "complete: a running execution only once it is stuck; a late report changes nothing"
heartbeat_seen "$w" "$action"
id=$(new_execution "$action" "$w")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
report "$w" "$id" 1 running
wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"
expect 409 POST "/api/v1/executions/$id/complete" '{"result":null}'
assert_contains "$CALL_BODY" "not stuck" "a running one within its threshold"
# shellcheck disable=SC2016 # evaluated later, by wait_until
wait_until 10 '[ "$(call GET "/api/v1/staleness?health=stale&limit=1000" "" "$API_READ_KEY" |
                    cut -d" " -f2- | jq --argjson id '"$id"' "[.executions[] | select(.id == \$id)] | length")" = 1 ]'
expect 200 POST "/api/v1/executions/$id/complete" '{"result":{"by":"hand"}}'
report "$w" "$id" 1 completed '{"by":"worker"}'
report "$w" "$id" 1 failed 'null' 'a late failure'
barrier=$(new_execution "$action" "$w")
wait_until 10 "[ \"\$(exec_field $barrier status)\" = scheduled ]"
report "$w" "$barrier" 1 running
wait_until 10 "[ \"\$(exec_field $barrier status)\" = running ]"
assert_eq 'completed|{"by": "hand"}|ops' "$(exec_field "$id" "status, result, completed_by")" \
    "the late reports changed nothing"
assert_eq "running>completed|completed by hand by ops" \
    "$(psql_q "select from_status || '>' || to_status, note from execution_events
               where execution_id = $id and applied order by id desc limit 1")" \
    "the manual step is stored, not implied"
psql_q "update executions set status = 'cancelled' where id = $barrier" >/dev/null

log "the CLI: dlq queue, investigate and complete, over the API and on the database"
api_cli() { WARREN_API_URL=$API WARREN_API_KEY=${KEY:-$API_WRITE_KEY} "$WARREN_BIN" "$@"; }
out=$(KEY=$API_READ_KEY api_cli dlq queue --limit 3 --json)
assert_eq 3 "$(jq '.items | length' <<<"$out")" "dlq queue over the API"
db_page=$("$WARREN_BIN" dlq queue --limit 3 --json)
assert_eq "$(jq -c '[.items[].id]' <<<"$out")" "$(jq -c '[.items[].id]' <<<"$db_page")" "the same page on the database"
next=$(jq -r .next_cursor <<<"$db_page")
"$WARREN_BIN" dlq queue --limit 3 --cursor "$next" >"$TEST_TMP/queue.txt" || fail "dlq queue --cursor"
assert_contains "$(head -1 "$TEST_TMP/queue.txt")" "PRIORITY" "the table's header"
f2=$(failed "$action")
out=$(api_cli investigate "$f2" --notes "over the API")
assert_contains "$out" "investigating execution $f2" "warren investigate over the API"
assert_eq "ops|over the API" "$(psql_q "select resolved_by, notes from dead_letters where execution_id = $f2")" "its record"
if KEY=$API_READ_KEY api_cli investigate "$f2" 2>"$TEST_TMP/err"; then fail "a read key investigated"; fi
f3=$(failed "$action")
"$WARREN_BIN" investigate "$f3" --json >"$TEST_TMP/inv.json" || fail "warren investigate on the database"
assert_eq "manual|cli:$(id -un)" "$(jq -r '"\(.reason)|\(.resolved_by)"' "$TEST_TMP/inv.json")" "on the database"
if "$WARREN_BIN" investigate "$f3" 2>"$TEST_TMP/err"; then fail "a second investigate succeeded"; fi
assert_contains "$(cat "$TEST_TMP/err")" "already has open record" "its refusal"
out=$(api_cli complete "$f2" --result '{"n":1}' --notes "cli")
assert_eq "execution $f2: completed" "$out" "warren complete over the API"
assert_eq '{"n": 1}|ops' "$(exec_field "$f2" "result, completed_by")" "its row"
"$WARREN_BIN" complete "$f3" --result '[1,2]' >/dev/null || fail "warren complete on the database"
assert_eq "[1, 2]|cli:$(id -un)|manually_resolved" \
    "$(psql_q "select e.result, e.completed_by, d.resolution from executions e
               join dead_letters d on d.execution_id = e.id where e.id = $f3")" "on the database"
set +e
"$WARREN_BIN" complete "$f3" --result 1 2>"$TEST_TMP/err"
rc=$?
"$WARREN_BIN" complete "$f3" --result '{' 2>/dev/null
rc2=$?
set -e
assert_eq "1|2" "$rc|$rc2" "exit codes: refused, usage"
assert_contains "$(cat "$TEST_TMP/err")" "it has completed" "the refusal on the database"
pass
