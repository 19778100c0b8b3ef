#!/usr/bin/env bash
# Idempotent submission (docs/api.md): a key given twice with the same request (members in
# another order) makes one row and answers 200 "replayed": true, by body field or by the
# Idempotency-Key header; another request with that key is 409 naming the execution; a retried
# batch of 1,000 keyed submissions still makes 1,000 rows; 20 concurrent submits of one key make
# one row; after api.idempotency_window_s the key is taken anew and retention prunes expired
# keys; `warren submit --idempotency-key` on the database URL (and over the API) follows the
# same rules, and a submit without a key writes no key row.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
action=$(unique_name act)
forget_executions "$action"
api_start ex
rows() { psql_q "select count(*) from executions where action_ref = '$action' $*"; }
key_row() { psql_q "select execution_id from execution_idempotency_keys where idempotency_key = '$1'"; }

log "the same key twice: one row, 201 then 200 with replayed"
k=$(unique_name key)
expect 201 POST /api/v1/executions "{\"action_ref\": \"$action\", \"params\": {\"a\": 1, \"b\": [2]}, \"idempotency_key\": \"$k\"}"
id=$(jq -r .id <<<"$CALL_BODY")
assert_eq "false|requested" "$(jq -r '"\(.replayed)|\(.status)"' <<<"$CALL_BODY")" "first answer"
assert_eq "$id" "$(key_row "$k")" "key row"
expect 200 POST /api/v1/executions "{\"idempotency_key\": \"$k\", \"params\": {\"b\": [2], \"a\": 1}, \"action_ref\": \"$action\"}"
assert_eq "$id|true|ops" "$(jq -r '"\(.id)|\(.replayed)|\(.submitted_by)"' <<<"$CALL_BODY")" "replay"
CALL_HEADER="Idempotency-Key: $k" expect 200 POST /api/v1/executions "{\"action_ref\": \"$action\", \"params\": {\"a\": 1, \"b\": [2]}}"
assert_eq "$id|true" "$(jq -r '"\(.id)|\(.replayed)"' <<<"$CALL_BODY")" "replay by header"
assert_eq 1 "$(rows)" "rows"

log "a different request with that key: 409 naming the execution, nothing written"
expect 409 POST /api/v1/executions "{\"action_ref\": \"$action\", \"params\": {\"a\": 2}, \"idempotency_key\": \"$k\"}"
assert_eq "conflict|$id" "$(jq -r '"\(.error)|\(.execution_id)"' <<<"$CALL_BODY")" "409 body"
assert_contains "$(jq -r .detail <<<"$CALL_BODY")" "execution $id"
expect 409 POST /api/v1/executions "{\"action_ref\": \"$action\", \"idempotency_key\": \"$k\", \"timeout_s\": 5}"
assert_eq 1 "$(rows)" "rows after the conflicts"

log "bad keys and header mix-ups: 400"
expect 400 POST /api/v1/executions "{\"action_ref\": \"$action\", \"idempotency_key\": \"a b\"}"
expect 400 POST /api/v1/executions "{\"action_ref\": \"$action\", \"idempotency_key\": \"$(printf 'k%.0s' {1..256})\"}"
expect 400 POST /api/v1/executions "{\"action_ref\": \"$action\", \"idempotency_key\": 7}"
CALL_HEADER="Idempotency-Key: other-$k" expect 400 POST /api/v1/executions "{\"action_ref\": \"$action\", \"idempotency_key\": \"$k\"}"
assert_contains "$CALL_BODY" "differ"
CALL_HEADER="Idempotency-Key: $k" expect 400 POST /api/v1/executions "[{\"action_ref\": \"$action\"}]"
expect 400 POST /api/v1/executions "[{\"action_ref\": \"$action\", \"idempotency_key\": \"d-$k\"}, {\"action_ref\": \"$action\", \"idempotency_key\": \"d-$k\"}]"
assert_eq 1 "$(rows)" "rows after the refusals"

log "a batch of 1,000 with keys, sent twice: 1,000 rows"
bk=$(unique_name batch)
jq -cn --arg a "$action" --arg k "$bk" '[range(1000) | {action_ref: $a, params: {n: .}, idempotency_key: "\($k)-\(.)"}]' >"$TEST_TMP/batch.json"
expect 201 POST /api/v1/executions "$(cat "$TEST_TMP/batch.json")"
first=$(jq -c .ids <<<"$CALL_BODY")
assert_eq "1000|0" "$(jq -r '"\(.count)|\([.replayed[] | select(.)] | length)"' <<<"$CALL_BODY")" "first batch"
expect 200 POST /api/v1/executions "$(cat "$TEST_TMP/batch.json")"
assert_eq "$first" "$(jq -c .ids <<<"$CALL_BODY")" "the retry answers the same ids"
assert_eq 1000 "$(jq '[.replayed[] | select(.)] | length' <<<"$CALL_BODY")" "all replayed"
assert_eq 1000 "$(rows "and params ? 'n'")" "rows after the retry"
log "a batch with one key in conflict: 409 naming it, and none of its new submissions written"
expect 409 POST /api/v1/executions "[{\"action_ref\": \"$action\", \"idempotency_key\": \"new-$bk\"}, {\"action_ref\": \"$action\", \"params\": {\"n\": -1}, \"idempotency_key\": \"$bk-7\"}]"
assert_eq "1|$(jq '.[7]' <<<"$first")" "$(jq -r '"\(.index)|\(.execution_id)"' <<<"$CALL_BODY")" "409 of a batch"
assert_eq "" "$(key_row "new-$bk")" "no key row for the batch's new submission"
assert_eq 1001 "$(rows)" "rows after the batch in conflict"

log "20 concurrent submits of one key: one row"
ck=$(unique_name race)
body="{\"action_ref\": \"$action\", \"params\": {\"race\": true}, \"idempotency_key\": \"$ck\"}"
pids=()
for i in $(seq 20); do
    curl -sS --max-time 20 -o "$TEST_TMP/race.$i" -w '%{http_code}' -H "Authorization: Bearer $API_WRITE_KEY" \
        -H 'Content-Type: application/json' --data-binary "$body" "$API/api/v1/executions" >"$TEST_TMP/race.$i.code" &
    pids+=("$!")
done
wait "${pids[@]}"
assert_eq "1|19" "$(grep -lx 201 "$TEST_TMP"/race.*.code | wc -l)|$(grep -lx 200 "$TEST_TMP"/race.*.code | wc -l)" \
    "one 201, 19 replays"
assert_eq 1 "$(jq -r .id "$TEST_TMP"/race.? "$TEST_TMP"/race.?? | sort -u | wc -l)" "one id in all answers"
assert_eq 1 "$(rows "and params ? 'race'")" "rows of the race"

log "without a key: no key row"
before=$(psql_q "select count(*) from execution_idempotency_keys")
expect 201 POST /api/v1/executions "{\"action_ref\": \"$action\"}"
assert_eq null "$(jq -r '.replayed' <<<"$CALL_BODY")" "no replayed member without a key"
assert_eq "$before" "$(psql_q "select count(*) from execution_idempotency_keys")" "key rows"

log "a keyed submit keeps its priority and schedule; a replay compares them too"
sk="sched-$k"
expect 201 POST /api/v1/executions "{\"action_ref\": \"$action\", \"priority\": 7, \"delay_s\": 600, \"idempotency_key\": \"$sk\"}"
sid=$(jq -r .id <<<"$CALL_BODY")
assert_eq "7|t" "$(psql_q "select priority, due_at > now() + interval '500 seconds' from executions where id = $sid")" \
    "priority and due time of a keyed submit"
expect 200 POST /api/v1/executions "{\"action_ref\": \"$action\", \"priority\": 7, \"delay_s\": 600, \"idempotency_key\": \"$sk\"}"
assert_eq "$sid|true" "$(jq -r '"\(.id)|\(.replayed)"' <<<"$CALL_BODY")" "the same request replays"
expect 409 POST /api/v1/executions "{\"action_ref\": \"$action\", \"priority\": 2, \"delay_s\": 600, \"idempotency_key\": \"$sk\"}"

log "the CLI on the database URL: the same rules, and the keys the API took"
cli() { WARREN__LOG__LEVEL=warn "$WARREN_BIN" "$@"; }
cid=$(cli submit "$action" --params '{"cli": 1}' --idempotency-key "cli-$k")
assert_eq "$cid" "$(key_row "cli-$k")" "key row of the CLI"
again=$(cli submit "$action" --params '{ "cli" : 1 }' --idempotency-key "cli-$k" 2>"$TEST_TMP/cli.err")
assert_eq "$cid" "$again" "the CLI's replay prints the same id"
assert_contains "$(cat "$TEST_TMP/cli.err")" "names execution $cid"
assert_eq "$id|true" "$(cli submit "$action" --params '{"b": [2], "a": 1}' --idempotency-key "$k" --json 2>/dev/null | jq -r '"\(.id)|\(.replayed)"')" "the CLI replays the API's key"
rc=0
cli submit "$action" --params '{"cli": 2}' --idempotency-key "cli-$k" >/dev/null 2>"$TEST_TMP/cli.err" || rc=$?
assert_eq 1 "$rc" "exit status of the CLI's conflict"
assert_contains "$(cat "$TEST_TMP/cli.err")" "names execution $cid, submitted with a different request"
rc=0
cli submit "$action" --idempotency-key "a b" >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "exit status of a bad key"
assert_eq 1 "$(rows "and params ? 'cli'")" "rows of the CLI"
viaapi=$(env -u WARREN__DATABASE__URL WARREN_API_URL="$API" WARREN_API_KEY="$API_WRITE_KEY" \
    WARREN__LOG__LEVEL=warn "$WARREN_BIN" submit "$action" --params '{"cli": 1}' --idempotency-key "cli-$k" 2>"$TEST_TMP/cli.err")
assert_eq "$cid" "$viaapi" "the CLI over the API replays it too"
assert_contains "$(cat "$TEST_TMP/cli.err")" "names execution $cid"
WARREN__API__IDEMPOTENCY_WINDOW_S=1 cli submit "$action" --idempotency-key "cliw-$k" >/dev/null
sleep 1.2
cnew=$(WARREN__API__IDEMPOTENCY_WINDOW_S=1 cli submit "$action" --params '{"other": 1}' --idempotency-key "cliw-$k")
assert_eq "$cnew" "$(key_row "cliw-$k")" "the CLI takes an expired key anew"
exec_stop "$EXEC_PID" ex

log "a short window: an expired key is taken anew, and retention prunes expired keys"
export WARREN__API__IDEMPOTENCY_WINDOW_S=1 WARREN__RETENTION__INTERVAL_S=1
api_start ex2
wk=$(unique_name win)
expect 201 POST /api/v1/executions "{\"action_ref\": \"$action\", \"idempotency_key\": \"$wk\"}"
old=$(jq -r .id <<<"$CALL_BODY")
sleep 1.2
expect 201 POST /api/v1/executions "{\"action_ref\": \"$action\", \"params\": {\"x\": 1}, \"idempotency_key\": \"$wk\"}"
new=$(jq -r .id <<<"$CALL_BODY")
[ "$new" != "$old" ] || fail "the expired key answered with its old execution $old"
assert_eq "false" "$(jq -r .replayed <<<"$CALL_BODY")" "a new execution, not a replay"
wait_until 15 "[ -z \"\$(key_row '$wk')\" ]"
assert_eq "requested|requested" "$(exec_field "$old" status)|$(exec_field "$new" status)" "both executions stay"
wait_log ex2 '"msg":"retention: pruned".*"what":"idempotency keys"' 5
exec_stop "$EXEC_PID" ex2

pass
