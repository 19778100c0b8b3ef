#!/usr/bin/env bash
# The executor's HTTP API with curl: every endpoint's happy path, a batch of 1000 in one call,
# cursor pages, auth (no key 401, wrong key 403, read key on a write 403, right key), bad input
# (malformed JSON, wrong types, unknown fields, media type, SQL metacharacters and invalid UTF-8
# in every string field) answered 400 with nothing else happening, 404/405, keys files that
# others may read refused, and `config check` masking api.keys.
# shellcheck disable=SC2154 # pin is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
action=$(unique_name act)
forget_executions "$action"
api_start ex
mine() { psql_q "select count(*) from executions where action_ref like '$action%'"; }

log "health and metrics need no key"
expect 200 GET /livez '' -
expect 200 GET /readyz '' -
assert_eq ready "$(jq -r .status <<<"$CALL_BODY")" "readyz status"
code=$(curl -s -o "$TEST_TMP/metrics" -w '%{http_code}' "$API/metrics")
assert_eq 200 "$code" "/metrics"
grep -q '^warren_executions_backlog{status="requested"}' "$TEST_TMP/metrics" || fail "no backlog gauge"

log "submit one: 201 with the row, submitted_by the key's name"
new_worker pin pin # the scheduler dispatches pinned rows at once: to a queue of this test
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action.pinned\",\"params\":{\"n\":1},\"worker\":\"$pin\",\"timeout_s\":7}"
assert_eq "requested|$action.pinned" "$(jq -r '"\(.status)|\(.action_ref)"' <<<"$CALL_BODY")" "answer"
pid=$(jq -r .id <<<"$CALL_BODY")
assert_eq "$action.pinned|1|$pin|7|ops" \
    "$(exec_field "$pid" "action_ref, params->>'n', pinned_worker, timeout_s, submitted_by")" "row"
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action\"}"
id=$(jq -r .id <<<"$CALL_BODY")

log "get one: the row with its history, 404 for none, 400 for no id"
expect 200 GET "/api/v1/executions/$id" '' "$API_READ_KEY"
assert_eq "$id|requested|1" "$(jq -r '"\(.id)|\(.status)|\(.events | length)"' <<<"$CALL_BODY")" "get"
assert_eq "true|true|true|true" \
    "$(jq -r '"\(has("outcome"))|\(has("attempt"))|\(.dead_letters | type == "array")|\(.events[0] | has("attempt"))"' <<<"$CALL_BODY")" \
    "get: outcome, attempt, dead letters, the attempt of each change"
expect 404 GET /api/v1/executions/999999999999 '' "$API_READ_KEY"
expect 400 GET /api/v1/executions/abc '' "$API_READ_KEY"
expect 400 GET "/api/v1/executions/1%27%20OR%201=1" '' "$API_READ_KEY"

log "a batch of 1000 in one call: 201 with 1000 ids, 1000 rows"
jq -cn --arg a "$action.batch" '[range(1000) | {action_ref: $a, params: {i: .}}]' >"$TEST_TMP/batch.json"
code=$(curl -sS -o "$TEST_TMP/batch.out" -w '%{http_code}' -H "X-API-Key: $API_WRITE_KEY" \
    -H 'Content-Type: application/json' --data-binary "@$TEST_TMP/batch.json" "$API/api/v1/executions")
assert_eq 201 "$code" "batch status ($(head -c 200 "$TEST_TMP/batch.out"))"
assert_eq "1000|1000" "$(jq -r '"\(.count)|\(.ids | unique | length)"' "$TEST_TMP/batch.out")" "batch ids"
assert_eq 1000 "$(psql_q "select count(*) from executions where action_ref = '$action.batch'")" "batch rows"
first=$(jq -r '.ids[0]' "$TEST_TMP/batch.out")
assert_eq 0 "$(psql_q "select params->>'i' from executions where id = $first")" "batch keeps its order"
expect 400 POST /api/v1/executions "$(jq -cn --arg a "$action" '[range(1001) | {action_ref: $a}]')"
expect 400 POST /api/v1/executions '[]'

log "list: cursor pages, newest first, no row twice; filters"
seen=""
path="/api/v1/executions?action=$action.batch&limit=300"
pages=0
while :; do
    expect 200 GET "$path" '' "$API_READ_KEY"
    seen+=$(jq -r '.executions[].id' <<<"$CALL_BODY")$'\n'
    cursor=$(jq -r '.next_cursor // empty' <<<"$CALL_BODY")
    pages=$((pages + 1))
    [ -n "$cursor" ] || break
    path="/api/v1/executions?action=$action.batch&limit=300&cursor=$cursor"
done
assert_eq 1000 "$(grep -c . <<<"$seen")" "rows over all pages"
assert_eq 1000 "$(grep . <<<"$seen" | sort -u | wc -l)" "no row twice"
assert_eq "$(grep . <<<"$seen" | sort -rn)" "$(grep . <<<"$seen")" "newest first"
assert_eq 4 "$pages" "pages of 300"
expect 200 GET "/api/v1/executions?status=requested&action=$action&limit=5" '' "$API_READ_KEY"
assert_eq "$id" "$(jq -r '.executions | map(.id) | join(",")' <<<"$CALL_BODY")" "status and action filter"
expect 200 GET "/api/v1/executions?since=2999-01-01T00:00:00Z" '' "$API_READ_KEY"
assert_eq 0 "$(jq '.executions | length' <<<"$CALL_BODY")" "since filter"
for q in "status=bogus" "limit=0" "limit=1001" "limit=x" "cursor=zzz" "cursor=c1.0" "since=yesterday" "colour=red"; do
    expect 400 GET "/api/v1/executions?$q" '' "$API_READ_KEY"
done

log "workers"
w=$(unique_name w)
on_exit psql_q "delete from workers where id = '$w'"
psql_q "insert into workers (id, capabilities, capacity, heartbeat_interval_s, incarnation)
        values ('$w', '{other.$action}', 3, 60, '0123456789abcdef0123456789abcdef')" >/dev/null
expect 200 GET /api/v1/workers '' "$API_READ_KEY"
assert_eq "live|3|0|other.$action|0123456789abcdef0123456789abcdef|true" \
    "$(jq -r --arg w "$w" '.workers[] | select(.id == $w) |
        "\(.state)|\(.capacity)|\(.in_flight)|\(.capabilities | join(","))|\(.incarnation)|\(.heartbeat_age_s < 60)"' \
        <<<"$CALL_BODY")" "worker: state, capacity, in flight, capabilities, incarnation, heartbeat age"

log "auth: no key 401, wrong key 403, read key on a write 403"
body="{\"action_ref\":\"$action\"}"
before=$(mine)
expect 401 POST /api/v1/executions "$body" -
expect 403 POST /api/v1/executions "$body" "not-a-key-0123456789"
expect 403 POST /api/v1/executions "$body" "$API_READ_KEY"
expect 401 GET /api/v1/workers '' -
expect 403 GET /api/v1/workers '' "wrong-key-0123456789"
expect 401 POST "/api/v1/executions/$id/cancel" '' -
expect 403 POST "/api/v1/executions/$id/cancel" '' "$API_READ_KEY"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $API_WRITE_KEY" -H 'Content-Type: application/json' \
    --data "$body" "$API/api/v1/executions")
assert_eq 201 "$code" "X-API-Key works too"
assert_eq $((before + 1)) "$(mine)" "only the authorised write inserted"

log "bad input: 400/415 and nothing inserted"
before=$(mine)
while IFS= read -r bad; do
    expect 400 POST /api/v1/executions "${bad//ACT/$action}"
done <<'EOF2'
{"action_ref":
{"action_ref":"ACT"} trailing
{'action_ref':'ACT'}
"just a string"
null
[1, 2]
{"action_ref": 42}
{"action_ref": "ACT", "params": [1]}
{"action_ref": "ACT", "params": "x"}
{"action_ref": "ACT", "timeout_s": "5"}
{"action_ref": "ACT", "timeout_s": 0}
{"action_ref": "ACT", "timeout_s": 1.5}
{"action_ref": "ACT", "worker": 7}
{"action_ref": "ACT", "retries": 3}
{"action": "ACT"}
{"action_ref": "ACT", "params": {"a": "\u0000"}}
{"action_ref": "ACT'; DROP TABLE executions; --"}
{"action_ref": "ACT", "worker": "w'; DROP TABLE workers; --"}
{"action_ref": ""}
[{"action_ref": "ACT"}, {"action_ref": "ACT", "bogus": 1}]
EOF2
CALL_TYPE=text/plain expect 415 POST /api/v1/executions "{\"action_ref\":\"$action\"}"
# Invalid UTF-8 in each string field (bytes written with printf).
for tmpl in '{"action_ref":"%s\xff"}' '{"action_ref":"%s","worker":"w\xc3"}' \
    '{"action_ref":"%s","params":{"k":"\xed\xa0\x80"}}' '{"action_ref":"%s","params":{"\xfe":1}}'; do
    # shellcheck disable=SC2059
    printf "$tmpl" "$action" >"$TEST_TMP/bad.json"
    code=$(curl -sS -o "$TEST_TMP/bad.out" -w '%{http_code}' -H "X-API-Key: $API_WRITE_KEY" \
        -H 'Content-Type: application/json' --data-binary "@$TEST_TMP/bad.json" "$API/api/v1/executions")
    assert_eq 400 "$code" "invalid UTF-8 ($(cat "$TEST_TMP/bad.out"))"
done
assert_eq "$before" "$(mine)" "nothing inserted by bad input"
assert_eq t "$(psql_q "select to_regclass('executions') is not null and to_regclass('workers') is not null")" \
    "tables still there"

log "SQL metacharacters in params are stored verbatim"
meta="x'; DROP TABLE executions; -- \" \\\\ \$1 %s {} ☃"
expect 201 POST /api/v1/executions "$(jq -cn --arg a "$action" --arg m "$meta" '{action_ref: $a, params: {($m): $m}}')"
mid=$(jq -r .id <<<"$CALL_BODY")
assert_eq "$meta" "$(psql_q "select params->>(select k from jsonb_object_keys(params) k limit 1) from executions where id = $mid")" \
    "stored verbatim"

log "404 and 405"
expect 404 GET /api/v2/nothing '' -
expect 405 DELETE "/api/v1/executions/$id" '' -
expect 405 GET "/api/v1/executions/$id/cancel" '' "$API_READ_KEY"
expect 405 PUT /api/v1/executions '' -

log "a keys file others may read is refused: exit 1, the secret not in the log"
chmod 0644 "$API_KEYS_FILE"
rc=0
WARREN__API__LISTEN=127.0.0.1:0 timeout 20 "$WARREN_BIN" executor >"$TEST_TMP/refused.log" 2>&1 || rc=$?
assert_eq 1 "$rc" "executor with a readable keys file"
assert_contains "$(cat "$TEST_TMP/refused.log")" "readable or writable by group or others"
assert_not_contains "$(cat "$TEST_TMP/refused.log")" "$API_WRITE_KEY"
chmod 0600 "$API_KEYS_FILE"

log "config check masks api.keys; no key in the executor's log"
out=$(WARREN__API__KEYS="extra:read:$API_READ_KEY-x" "$WARREN_BIN" config check)
assert_contains "$out" 'api.keys '
assert_not_contains "$out" "$API_READ_KEY"
assert_not_contains "$(cat "$(bg_log ex)")" "$API_WRITE_KEY"
assert_not_contains "$(cat "$(bg_log ex)")" "$API_READ_KEY"

exec_stop "$EXEC_PID" ex
pass
