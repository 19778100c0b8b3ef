#!/usr/bin/env bash
# Retries on the real stack (docs/retries.md): a handler failing twice with exit 75 completes at
# attempt 3 with delays within the policy's bounds (jitter included); max_attempts exhausted ends
# failed with a max_retries_exceeded dead letter holding every attempt; a failure the policy does
# not retry is not retried; `warren retry` of a failed execution completes, refuses a completed
# one, and two at once make one attempt; `warren get --json` has "attempts" and "attempt"; the
# same over the API (overrides on submit, POST .../retry, GET with the attempts).
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
worker_env
# The default policy: exponential from 300 ms, doubling, full jitter: retry n waits [0, 300*2^(n-1)].
export WARREN__RETRY__BASE_MS=300 WARREN__RETRY__MAX_MS=5000 WARREN__RETRY__JITTER=full
forget_executions core.fail

exec_start ex
start_live_worker w retry
WORKER_PID=$BG_PID

# ---- exit 75 twice, then success: completed at attempt 3 ----
id=$("$WARREN_BIN" submit core.fail --params '{"code": 75, "until_attempt": 3}' --max-attempts 3 \
    --retry-on tempfail --worker "$w")
wait_until 30 "[ \"\$(exec_field $id status)\" = completed ]"
doc=$("$WARREN_BIN" get "$id" --json)
assert_eq "3|3|2|0" "$(jq -r '"\(.attempt)|\(.attempts | length)|\(.retries)|\(.manual_retries)"' <<<"$doc")" \
    "final attempt, attempts recorded, retries"
assert_eq "1 first tempfail retry 75|2 retry tempfail retry 75|3 retry completed none 0" \
    "$(jq -r '[.attempts[] | "\(.attempt) \(.kind) \(.outcome) \(.decision) \(.exit_code)"] | join("|")' <<<"$doc")" \
    "every attempt with its outcome and decision"
# Delays within the policy's bounds: retry n drew from [0, 300 * 2^(n-1)] ms, and the next
# attempt was not dispatched before it was due.
jq -e '.attempts[0].delay_ms >= 0 and .attempts[0].delay_ms <= 300
       and .attempts[1].delay_ms >= 0 and .attempts[1].delay_ms <= 600' <<<"$doc" >/dev/null ||
    fail "delays out of bounds: $(jq -c '[.attempts[].delay_ms]' <<<"$doc")"
for n in 0 1; do
    gap=$(psql_q "select (extract(epoch from b.scheduled_at - a.ended_at) * 1000)::int - a.delay_ms
                  from execution_attempt_history a join execution_attempt_history b
                    on b.execution_id = a.execution_id and b.attempt = a.attempt + 1
                  where a.execution_id = $id and a.attempt = $((n + 1))")
    log "attempt $((n + 1)) -> $((n + 2)): dispatched ${gap} ms after it was due"
    [ "$gap" -ge -5 ] || fail "attempt $((n + 2)) went out ${gap} ms before its due time"
done
assert_eq '{"attempt": 3}' "$(exec_field "$id" result::text)" "the handler's result"
history=$(psql_q "select string_agg(coalesce(from_status, '-') || '>' || to_status, ' ' order by seq)
                  from execution_history where execution_id = $id")
assert_contains "$history" "running>failed failed>requested" "history shows the retry"
assert_contains "$(psql_q "select note from execution_history where execution_id = $id and from_status = 'failed' limit 1")" \
    "retry due" "the history's note"

# ---- attempts exhausted: failed with max_retries_exceeded holding every attempt ----
id2=$("$WARREN_BIN" submit core.fail --params '{"code": 75}' --max-attempts 2 --worker "$w")
wait_until 30 "[ \"\$(exec_field $id2 status)\" = failed ] && [ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $id2\")\" = 1 ]"
assert_eq 2 "$(exec_field "$id2" attempt)" "exhausted at attempt 2"
dl=$(psql_q "select body_text from dead_letters where execution_id = $id2 and reason = 'max_retries_exceeded'")
assert_eq "2|1,2|retry,exhausted|tempfail,tempfail" \
    "$(jq -r '"\(.attempts | length)|\([.attempts[].attempt] | join(","))|\([.attempts[].decision] | join(","))|\([.attempts[].outcome] | join(","))"' <<<"$dl")" \
    "the dead letter holds every attempt"
assert_eq "$id2 failed" "$(jq -r '"\(.execution.id) \(.execution.status)"' <<<"$dl")" "and the execution"

# ---- not retryable: a plain failure when only tempfail is retried ----
id3=$("$WARREN_BIN" submit core.fail --params '{"code": 3}' --max-attempts 5 --retry-on tempfail \
    --worker "$w")
wait_until 20 "[ \"\$(exec_field $id3 status)\" = failed ]"
sleep 1
assert_eq "failed 1" "$(psql_q "select status || ' ' || attempt from executions where id = $id3")" \
    "a plain failure is not retried"
assert_eq "failed not_retryable" "$(psql_q "select outcome || ' ' || decision from execution_attempt_history where execution_id = $id3")"
assert_eq 0 "$(psql_q "select count(*) from dead_letters where execution_id = $id3")" "no dead letter"

# ---- manual retry: a failed execution completes; a completed one is refused ----
id4=$("$WARREN_BIN" submit core.fail --params '{"code": 3, "until_attempt": 2}' --worker "$w")
wait_until 20 "[ \"\$(exec_field $id4 status)\" = failed ]"
run_warren retry4 retry "$id4"
assert_eq 0 "$RUN_RC" "warren retry exit status ($RUN_ERR)"
assert_contains "$RUN_OUT" "execution $id4: requested (manual retry after attempt 1)"
wait_until 20 "[ \"\$(exec_field $id4 status)\" = completed ]"
assert_eq "2|0|1|first,manual" \
    "$("$WARREN_BIN" get "$id4" --json | jq -r '"\(.attempt)|\(.retries)|\(.manual_retries)|\([.attempts[].kind] | join(","))"')" \
    "the manual attempt is counted apart"
run_warren retry4b retry "$id4"
assert_eq 1 "$RUN_RC" "a completed execution is refused"
assert_contains "$RUN_ERR" "execution $id4 is completed: it completed; a completed execution is not retried"
run_warren retry_missing retry 999999999
assert_eq 1 "$RUN_RC" "no such execution"

# ---- two manual retries at once make one attempt ----
id5=$("$WARREN_BIN" submit core.fail --params '{"code": 3, "until_attempt": 2}' --worker "$w")
wait_until 20 "[ \"\$(exec_field $id5 status)\" = failed ]"
"$WARREN_BIN" retry "$id5" >"$TEST_TMP/r1.out" 2>&1 & p1=$!
"$WARREN_BIN" retry "$id5" >"$TEST_TMP/r2.out" 2>&1 & p2=$!
rc1=0 rc2=0
wait "$p1" || rc1=$?
wait "$p2" || rc2=$?
assert_eq 1 "$((rc1 + rc2))" "one retry succeeds, one is refused ($(cat "$TEST_TMP/r1.out" "$TEST_TMP/r2.out"))"
wait_until 20 "[ \"\$(exec_field $id5 status)\" = completed ]"
assert_eq "2 1" "$(psql_q "select attempt || ' ' || manual_retries from executions where id = $id5")" \
    "one new attempt"

# ---- a copy of a completion of an attempt that was retried changes nothing ----
rid=$(psql_q "insert into executions (action_ref, status, worker, attempt, retries, due_at,
                                      attempt_kind)
              values ('core.fail', 'requested', '$w', 1, 1, now() + interval '1 hour', 'retry')
              returning id")
report "$w" "$rid" 1 failed null "a redelivered copy"
sleep 2
assert_eq "requested|1|0" \
    "$(psql_q "select status || '|' || attempt || '|' || (select count(*) from execution_attempt_history
               where execution_id = $rid) from executions where id = $rid")" \
    "a redelivered completion of the retried attempt does not fail the retry"
assert_contains "$("$WARREN_BIN" get "$rid")" "retry attempt due at" "warren get says what it waits for"

# ---- the same over the API: the overrides on submit, POST .../retry, the attempts ----
API="http://127.0.0.1:$(http_port ex)"
expect 201 POST /api/v1/executions \
    "{\"action_ref\": \"core.fail\", \"params\": {\"code\": 3, \"until_attempt\": 2}, \"worker\": \"$w\",
      \"max_attempts\": 1, \"retry_on\": \"failed, timeout\"}" -
aid=$(jq -r .id <<<"$CALL_BODY")
assert_eq "1|failed,timeout|null" "$(jq -r '"\(.retry_max_attempts)|\(.retry_on)|\(.fallback)"' <<<"$CALL_BODY")" \
    "the submission's overrides, as stored"
wait_until 20 "[ \"\$(exec_field $aid status)\" = failed ]"
expect 200 POST "/api/v1/executions/$aid/retry" "" -
assert_eq "requested|1" "$(jq -r '"\(.status)|\(.manual_retries)"' <<<"$CALL_BODY")" "retried over the API"
wait_until 20 "[ \"\$(exec_field $aid status)\" = completed ]"
expect 409 POST "/api/v1/executions/$aid/retry" "" -
assert_contains "$(jq -r .detail <<<"$CALL_BODY")" "it completed"
expect 200 GET "/api/v1/executions/$aid" "" -
assert_eq "2|2|first,manual" "$(jq -r '"\(.attempt)|\(.attempts | length)|\([.attempts[].kind] | join(","))"' <<<"$CALL_BODY")" \
    "GET answers the attempts"
expect 400 POST /api/v1/executions '{"action_ref": "core.fail", "retry_on": "sometimes"}' -
expect 400 POST /api/v1/executions '{"action_ref": "core.fail", "fallback": "none"}' -

# ---- submission overrides are checked ----
run_warren bad1 submit core.fail --retry-on sometimes
assert_eq 2 "$RUN_RC" "--retry-on with an unknown word"
assert_contains "$RUN_ERR" "'sometimes' is not a retry_on word"
run_warren bad2 submit core.fail --max-attempts 0
assert_eq 2 "$RUN_RC" "--max-attempts 0"
run_warren bad3 submit core.fail --fallback none
assert_eq 2 "$RUN_RC" "--fallback none"

stop_worker worker "$WORKER_PID"
exec_stop "$EXEC_PID" ex
[ "$(stat_of "$EXEC_STATS" retries_scheduled)" -ge 3 ] || fail "retries_scheduled: $EXEC_STATS"
[ "$(stat_of "$EXEC_STATS" retries_exhausted)" -ge 1 ] || fail "retries_exhausted: $EXEC_STATS"
pass
