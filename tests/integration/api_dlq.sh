#!/usr/bin/env bash
# Dead letters through the API and `warren dlq` (docs/dead-letters.md): a real TTL-expired
# execution is listed, shown with its x-death, marked investigating, redriven onto a live worker
# where the new attempt completes, and the record ends manually_resolved and linked; two
# concurrent redrives of one record make one attempt; purge refuses a wrong expected_count and
# never touches open records; stats count; bad input on every endpoint is a 400; the CLI prints
# the API's documents on both paths.
# shellcheck disable=SC2154 # gone, w are set by new_worker or start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
worker_env

new_worker gone dlqgone # never consumes: its dispatches expire
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=1000
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0
api_start ex
start_live_worker w dlqlive

log "a real TTL expiry becomes a pending worker_unavailable record"
id=$(new_execution core.echo "$gone" '{"n": 7}')
wait_until 15 "[ \"\$(exec_field $id status)\" = failed ]"
expect 200 GET "/api/v1/dead-letters?execution_id=$id"
assert_eq "1|$id|worker_unavailable|expired|pending|null" \
    "$(jq -r '"\(.items | length)|\(.items[0].execution_id)|\(.items[0].reason)|\(.items[0].cause)|\(.items[0].resolution)|\(.next_cursor)"' <<<"$CALL_BODY")" \
    "list by execution"
dl=$(jq -r '.items[0].id' <<<"$CALL_BODY")
expect 200 GET "/api/v1/dead-letters?reason=worker_unavailable&resolution=pending&action=core.echo&limit=1000"
assert_contains "$(jq -c '[.items[].id]' <<<"$CALL_BODY")" "$dl" "list by reason, resolution, action"
expect 200 GET "/api/v1/dead-letters?q=$(tr '[:lower:]' '[:upper:]' <<<"$gone")&limit=1000"
assert_contains "$(jq -c '[.items[].id]' <<<"$CALL_BODY")" "$dl" "text search in the body, any case"
expect 200 GET "/api/v1/dead-letters?execution_id=$id&reason=poison_message"
assert_eq '{"items":[],"next_cursor":null}' "$CALL_BODY" "a filter matching nothing"

expect 200 GET "/api/v1/dead-letters/$dl"
assert_eq "expired|worker.$gone.executions|1|failed|$gone" \
    "$(jq -r '"\(.snapshot.x_death[0].reason)|\(.snapshot.x_death[0].queue)|\(.snapshot.x_death[0].count)|\(.snapshot.execution.status)|\(.snapshot.attempts[-1].worker)"' <<<"$CALL_BODY")" \
    "show: the x-death and the execution"
assert_eq "$id" "$(jq -r '.body_base64 | @base64d | fromjson | .payload.execution_id' <<<"$CALL_BODY")" \
    "show: the raw body"
assert_eq "closed|closed" "$(jq -r '"\(.snapshot.breakers.publish)|\(.snapshot.breakers["consume_dead-letters"])"' <<<"$CALL_BODY")" \
    "show: the breakers when the record was written"

log "investigating, then redrive onto the live worker"
expect 200 PATCH "/api/v1/dead-letters/$dl" '{"resolution": "investigating", "notes": "looking", "metadata": {"ticket": "OPS-1"}}'
assert_eq "investigating|looking|OPS-1|ops" \
    "$(jq -r '"\(.resolution)|\(.notes)|\(.metadata.ticket)|\(.resolved_by)"' <<<"$CALL_BODY")" "patched"
expect 403 PATCH "/api/v1/dead-letters/$dl" '{"notes": "x"}' "$API_READ_KEY"
expect 200 POST "/api/v1/dead-letters/$dl/redrive" "{\"worker\": \"$w\"}"
assert_eq "manually_resolved|ops|2" "$(jq -r '"\(.resolution)|\(.resolved_by)|\(.redrive_attempt)"' <<<"$CALL_BODY")" \
    "the record is resolved and linked"
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq "$w|3|1|{\"n\": 7}" "$(exec_field "$id" "worker, attempt, redrive_count, result")" \
    "the new attempt completed on the live worker"
assert_contains "$(psql_q "select note from execution_history where execution_id = $id and to_status = 'requested'
    and from_status = 'failed'")" "redrive of dead letter $dl by ops" "history notes the redrive"
expect 409 POST "/api/v1/dead-letters/$dl/redrive"
assert_contains "$CALL_BODY" "redriven already" "a record is redriven at most once"

log "two concurrent redrives of one record make one attempt"
id2=$(new_execution core.echo "$gone")
wait_until 15 "[ \"\$(exec_field $id2 status)\" = failed ]"
dl2=$(psql_q "select id from dead_letters where execution_id = $id2")
(call POST "/api/v1/dead-letters/$dl2/redrive" "{\"worker\": \"$w\"}" >"$TEST_TMP/r1") &
p1=$!
"$WARREN_BIN" dlq redrive "$dl2" --worker "$w" >"$TEST_TMP/r2" 2>&1 || true
wait "$p1"
assert_eq 1 "$(psql_q "select redrive_count from executions where id = $id2")" "one redrive"
assert_eq 1 "$(psql_q "select count(*) from execution_history where execution_id = $id2 and to_status = 'requested'
    and from_status = 'failed'")" "one new attempt"
wait_until 20 "[ \"\$(exec_field $id2 status)\" = completed ]"

log "warren's redrive count travels in its own header, never in x-death"
id4=$(new_execution core.echo "$gone")
wait_until 15 "[ \"\$(exec_field $id4 status)\" = failed ]"
dl4=$(psql_q "select id from dead_letters where execution_id = $id4")
expect 200 POST "/api/v1/dead-letters/$dl4/redrive"
wait_until 15 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $id4\")\" = 2 ]"
assert_eq "1|pending|worker_unavailable|1|3" \
    "$(psql_q "select headers->>'redrive_count', resolution, investigation_reason,
               headers->'x-death'->0->>'count', headers->>'attempt'
               from dead_letters where execution_id = $id4 and id <> $dl4")" \
    "the new attempt's dead letter: redrive_count 1, a record of its own"

log "an execution that ended meanwhile is skipped and reported"
id3=$(new_execution core.echo "$gone")
wait_until 15 "[ \"\$(exec_field $id3 status)\" = failed ]"
dl3=$(psql_q "select id from dead_letters where execution_id = $id3")
# (cancelled: a completion would close the record itself, schema 025)
psql_q "update executions set status = 'cancelled' where id = $id3" >/dev/null
expect 409 POST "/api/v1/dead-letters/$dl3/redrive"
assert_contains "$CALL_BODY" "moved on (it is cancelled" "skipped"
assert_eq "pending" "$(psql_q "select resolution from dead_letters where id = $dl3")" "record left open"

log "stats"
expect 200 GET "/api/v1/dead-letters/stats?action=core.echo"
assert_eq "true|true|true" "$(jq -r '"\(.total >= 3)|\(.by_resolution.manually_resolved >= 2)|\(.mean_time_to_resolve_s != null)"' <<<"$CALL_BODY")" \
    "stats: $CALL_BODY"
assert_eq "true" "$(jq -r '.by_reason.worker_unavailable >= 3 and (.by_queue | length) >= 1 and .oldest_pending_age_s != null' <<<"$CALL_BODY")" \
    "stats by reason and queue"

log "purge: dry run, a wrong expected_count, never pending records"
filter="{\"action\": \"core.echo\", \"ids\": [$dl, $dl2, $dl3]}"
expect 200 POST /api/v1/dead-letters/purge "{\"filter\": $filter, \"dry_run\": true}"
assert_eq "2|0" "$(jq -r '"\(.matched)|\(.deleted)"' <<<"$CALL_BODY")" "dry run counts closed records only"
expect 409 POST /api/v1/dead-letters/purge "{\"filter\": $filter, \"expected_count\": 3}"
assert_eq 3 "$(psql_q "select count(*) from dead_letters where id in ($dl, $dl2, $dl3)")" "nothing deleted"
expect 400 POST /api/v1/dead-letters/purge "{\"filter\": {\"resolution\": \"pending\"}, \"expected_count\": 1}"
expect 200 POST /api/v1/dead-letters/purge "{\"filter\": $filter, \"expected_count\": 2}"
assert_eq "$dl3" "$(psql_q "select string_agg(id::text, ',') from dead_letters where id in ($dl, $dl2, $dl3)")" \
    "the closed ones deleted, the pending one kept"

log "bad input"
expect 400 GET "/api/v1/dead-letters?reason=bogus"
assert_contains "$CALL_BODY" "unknown value 'bogus'" "unknown reason"
expect 400 GET "/api/v1/dead-letters?resolution=done"
expect 400 GET "/api/v1/dead-letters?execution_id=-1"
expect 400 GET "/api/v1/dead-letters?since=yesterday"
expect 400 GET "/api/v1/dead-letters?limit=1001"
expect 400 GET "/api/v1/dead-letters?cursor=zz"
expect 400 GET "/api/v1/dead-letters?color=red"
expect 400 GET "/api/v1/dead-letters/stats?reason=bogus"
expect 400 GET /api/v1/dead-letters/abc
expect 404 GET /api/v1/dead-letters/999999999999
expect 400 PATCH "/api/v1/dead-letters/$dl3" '{"resolution": "fixed"}'
expect 400 PATCH "/api/v1/dead-letters/$dl3" '{"color": "red"}'
expect 400 PATCH "/api/v1/dead-letters/$dl3" '{}'
expect 400 PATCH "/api/v1/dead-letters/$dl3" '{"metadata": []}'
expect 404 PATCH /api/v1/dead-letters/999999999999 '{"notes": "x"}'
expect 400 POST "/api/v1/dead-letters/$dl3/redrive" '{"worker": "no spaces"}'
expect 400 POST "/api/v1/dead-letters/$dl3/redrive" "{\"worker\": \"$w\", \"unpin\": true}"
expect 400 POST "/api/v1/dead-letters/$dl3/redrive" '{"unpin": 1}'
expect 404 POST /api/v1/dead-letters/999999999999/redrive
expect 400 POST /api/v1/dead-letters/purge '{"filter": {}}'
expect 400 POST /api/v1/dead-letters/purge '{"filter": {}, "expected_count": -1}'
expect 400 POST /api/v1/dead-letters/purge '{"filter": {"reason": "bogus"}, "dry_run": true}'
ids=$(seq -s, 1 1001)
expect 400 POST /api/v1/dead-letters/purge "{\"filter\": {\"ids\": [$ids]}, \"dry_run\": true}"
assert_contains "$CALL_BODY" "1 to 1000 record ids, not 1001" "1,001 ids"
expect 200 POST /api/v1/dead-letters/purge '{"filter": {"execution_id": 999999999991}, "dry_run": true}'
assert_eq 0 "$(jq .matched <<<"$CALL_BODY")" "a filter matching nothing purges nothing"

log "warren dlq: the API's documents over the API and on the database URL"
via_db=$(env -u WARREN_API_URL "$WARREN_BIN" dlq show "$dl3" --json | jq -c 'del(.age_s, .snapshot.taken_at)')
via_api=$(WARREN_API_URL=$API WARREN_API_KEY=$API_READ_KEY "$WARREN_BIN" dlq show "$dl3" --json |
    jq -c 'del(.age_s, .snapshot.taken_at)')
assert_eq "$via_api" "$via_db" "show --json"
assert_eq "$dl3" "$(env -u WARREN_API_URL "$WARREN_BIN" dlq list --execution-id "$id3" --json | jq -r '.items[0].id')" \
    "list --json on the database URL"
out=$(WARREN_API_URL=$API WARREN_API_KEY=$API_READ_KEY "$WARREN_BIN" dlq list --execution-id "$id3")
assert_contains "$out" "worker_unavailable" "list as a table"
WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" dlq resolve "$dl3" \
    --resolution permanent_failure --notes "gave up" >/dev/null
assert_eq "permanent_failure|gave up|ops" "$(psql_q "select resolution, notes, resolved_by from dead_letters where id = $dl3")" \
    "dlq resolve over the API"
"$WARREN_BIN" dlq resolve "$dl3" --resolution investigating >/dev/null
assert_eq "investigating|cli:$(id -un)" "$(psql_q "select resolution, resolved_by from dead_letters where id = $dl3")" \
    "dlq resolve on the database URL"
rc=0
"$WARREN_BIN" dlq list --reason bogus >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "an unknown reason is a usage error"
rc=0
out=$("$WARREN_BIN" dlq purge --action core.echo --expected-count 12345 2>&1) || rc=$?
assert_eq 1 "$rc" "purge with a wrong count fails: $out"
assert_contains "$(env -u WARREN_API_URL "$WARREN_BIN" dlq stats --json)" '"by_reason"' "stats --json"
pass
