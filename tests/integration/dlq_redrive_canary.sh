#!/usr/bin/env bash
# Redrive tasks that stop themselves (docs/dead-letters.md, "Canary"), on a live worker whose
# handler fails until the test "fixes" it: a canary of 10 whose fix still fails pauses the task
# as paused_canary after exactly 10 moved, with the 10 failures listed and the other 190 records
# untouched; it holds its source; resumed with the fix in place it moves the rest, all 200; a
# fresh task with the fix in place passes its canary and moves all 200; 3 failures of 10 pause a
# task at max_failure_ratio 0.2 and not at 0.3 (the boundary passes); every item is reported
# (moved with its outcome, skipped and why); a paused task is cancelled; the fourth redrive of
# one execution is refused with 409 (dead_letter.max_redrives) and skipped by a task.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
worker_env

# The handler: fails (exit 1, "still broken" on stderr) until the file "fixed" exists, and
# always when its params say "broken".
action=$(unique_name canary)
fixed="$TEST_TMP/fixed"
mkdir -p "$TEST_TMP/handlers"
cat >"$TEST_TMP/handlers/$action" <<EOF
#!/bin/sh
params=\$(cat)
case "\$params" in *broken*) echo 'broken for good' >&2; exit 1 ;; esac
if [ -e '$fixed' ]; then echo '{"fixed": true}'; exit 0; fi
echo 'still broken' >&2
exit 1
EOF
chmod +x "$TEST_TMP/handlers/$action"
export WARREN__WORKER__HANDLERS_DIR="$TEST_TMP/handlers"
forget_executions "$action"
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0 WARREN__STALENESS__INTERVAL_S=0
api_start ex
start_live_worker w canw

# records QUEUE N: N failed executions of the action, each with a pending record from QUEUE.
records() { redrive_records "$1" "$2" "$action" "$w"; }
untouched() { # QUEUE: records not redriven whose execution is still failed on attempt 1
    psql_q "select count(*) from dead_letters d join executions e on e.id = d.execution_id
            where d.queue = '$1' and d.redriven_at is null and e.status = 'failed' and e.attempt = 1"
}

log "a canary of 10 whose fix still fails: paused_canary after exactly 10"
q1=$(unique_name q1)
records "$q1" 200
expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q1\"}, \"rate\": 100, \"canary_count\": 10}"
t1=$(jq -r .id <<<"$CALL_BODY")
assert_eq "running|redriving|10|0" \
    "$(jq -r '"\(.status)|\(.canary_state)|\(.canary_count)|\(.max_failure_ratio)"' <<<"$CALL_BODY")" "started"
wait_until 60 "[ \"\$(task_field $t1 status)\" = paused_canary ]"
expect 200 GET "/api/v1/redrive-tasks/$t1"
assert_eq "10|0|failed|10|10|failed" \
    "$(jq -r '"\(.moved)|\(.skipped)|\(.canary_state)|\(.canary_failures | length)|\(.outcomes.failed)|\([.canary_failures[].outcome] | unique | join(","))"' <<<"$CALL_BODY")" \
    "paused with the 10 failures listed"
assert_contains "$(jq -r '.canary_failures[0].error' <<<"$CALL_BODY")" "exited with code 1" "a failure's error"
ex1=$(jq -r '.canary_failures[0].execution_id' <<<"$CALL_BODY")
assert_eq "failed|1" "$(exec_field "$ex1" "status || '|' || redrive_count")" "the listed execution failed again"
assert_eq 190 "$(untouched "$q1")" "the other 190 records untouched"
sleep 1
assert_eq "paused_canary|10" "$(task_field "$t1" status)|$(task_field "$t1" moved)" "it does not go on"
expect 200 GET "/api/v1/redrive-tasks/$t1/items?result=moved"
assert_eq "10|true|failed|null" \
    "$(jq -r '"\(.items | length)|\([.items[].canary] | all)|\([.items[].outcome] | unique | join(","))|\(.next_cursor)"' <<<"$CALL_BODY")" \
    "the canary's items"
expect 409 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q1\"}}"
assert_contains "$CALL_BODY" "redrive task $t1 is active on source '$q1'" "a paused task holds its source"
expect 403 POST "/api/v1/redrive-tasks/$t1/resume" '' "$API_READ_KEY"
out=$("$WARREN_BIN" dlq task "$t1")
assert_contains "$out" "canary of 10: failed" "dlq task shows the canary"
assert_contains "$out" "failed: " "dlq task lists the failures"

log "the fix in place, resumed: the same task moves all 200"
touch "$fixed"
out=$(WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" dlq resume-task "$t1" --json)
assert_eq "running|resumed|ops" "$(jq -r '"\(.status)|\(.canary_state)|\(.resumed_by)"' <<<"$out")" "resumed"
expect 409 POST "/api/v1/redrive-tasks/$t1/resume"
assert_contains "$CALL_BODY" "only a paused_canary task is resumed" "resume of a running task"
wait_until 60 "[ \"\$(task_field $t1 status)\" = completed ]"
assert_eq "200|0" "$(task_field "$t1" moved)|$(task_field "$t1" skipped)" "moved all 200"
wait_until 60 "[ \"\$(task_field $t1 outcomes.completed)\" = 190 ]"
assert_eq "190|10" "$(task_field "$t1" outcomes.completed)|$(task_field "$t1" outcomes.failed)" \
    "outcomes: the 190 after the fix completed"
expect 200 GET "/api/v1/redrive-tasks/$t1/items?limit=150"
assert_eq "150|false" "$(jq -r '"\(.items | length)|\(.next_cursor == null)"' <<<"$CALL_BODY")" "a full page"
expect 200 GET "/api/v1/redrive-tasks/$t1/items?limit=150&cursor=$(jq -r .next_cursor <<<"$CALL_BODY")"
assert_eq "50|null" "$(jq -r '"\(.items | length)|\(.next_cursor)"' <<<"$CALL_BODY")" "the last page"

log "a fresh task with the fix in place passes its canary and moves all 200"
q2=$(unique_name q2)
records "$q2" 200
out=$(WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" dlq redrive-all --queue "$q2" \
    --rate 100 --canary 10 --max-failure-ratio 0.2 --json)
t2=$(jq -r .id <<<"$out")
assert_eq "10|0.2" "$(jq -r '"\(.canary_count)|\(.max_failure_ratio)"' <<<"$out")" "the CLI's canary"
wait_until 60 "[ \"\$(task_field $t2 status)\" = completed ]"
expect 200 GET "/api/v1/redrive-tasks/$t2"
assert_eq "200|0|passed|[]" "$(jq -c -r '"\(.moved)|\(.skipped)|\(.canary_state)|\(.canary_failures)"' <<<"$CALL_BODY")" \
    "canary passed, all moved"
wait_until 60 "[ \"\$(task_field $t2 outcomes.completed)\" = 200 ]"
assert_eq 200 "$(psql_q "select count(*) from dead_letters d join executions e on e.id = d.execution_id
    where d.queue = '$q2' and e.status = 'completed' and e.redrive_count = 1")" "200 executions completed"

log "max_failure_ratio: 3 failures of 10 pause a task at 0.2, not at 0.3"
for ratio in 0.2 0.3; do
    q=$(unique_name "r${ratio#0.}")
    records "$q" 20
    psql_q "update executions set params = '{\"broken\": true}' where id in (select execution_id
            from dead_letters where queue = '$q' order by id offset 2 limit 3)" >/dev/null
    expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q\"}, \"canary_count\": 10, \"max_failure_ratio\": $ratio}"
    t=$(jq -r .id <<<"$CALL_BODY")
    if [ "$ratio" = 0.2 ]; then
        wait_until 60 "[ \"\$(task_field $t status)\" = paused_canary ]"
        assert_eq "10|3" "$(task_field "$t" moved)|$(task_field "$t" 'canary_failures | length')" "paused at $ratio"
        assert_eq 10 "$(untouched "$q")" "the rest untouched at $ratio"
        expect 200 POST "/api/v1/redrive-tasks/$t/cancel"
    else
        wait_until 60 "[ \"\$(task_field $t status)\" = completed ]"
        assert_eq "20|passed|3" "$(task_field "$t" moved)|$(task_field "$t" canary_state)|$(task_field "$t" 'canary_failures | length')" \
            "passed at $ratio, the tolerated failures listed"
        wait_until 30 "[ \"\$(task_field $t outcomes.completed)\" = 17 ]"
        assert_eq 3 "$(task_field "$t" outcomes.failed)" "3 failed for good"
    fi
done

log "a paused task is cancelled"
rm -f "$fixed"
q3=$(unique_name q3)
records "$q3" 20
expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q3\"}, \"canary_count\": 5, \"max_failure_ratio\": 0.5}"
t3=$(jq -r .id <<<"$CALL_BODY")
wait_until 60 "[ \"\$(task_field $t3 status)\" = paused_canary ]"
expect 200 POST "/api/v1/redrive-tasks/$t3/cancel"
assert_eq "cancelled|5" "$(jq -r '"\(.status)|\(.moved)"' <<<"$CALL_BODY")" "cancelled at once"
assert_eq 15 "$(untouched "$q3")" "the rest untouched"
expect 409 POST "/api/v1/redrive-tasks/$t3/resume"

log "dead_letter.max_redrives (3): the fourth redrive of an execution is refused"
q4=$(unique_name q4)
records "$q4" 1
ex=$(psql_q "select execution_id from dead_letters where queue = '$q4'")
for n in 1 2 3; do
    dl=$(psql_q "select id from dead_letters where execution_id = $ex and redriven_at is null")
    expect 200 POST "/api/v1/dead-letters/$dl/redrive"
    wait_until 30 "[ \"\$(exec_field $ex status)\" = failed ]"
    assert_eq "$n" "$(exec_field "$ex" redrive_count)" "redrive $n ran and failed"
    psql_q "insert into dead_letters (dedup_key, execution_id, reason, queue, headers, body)
            values ('$q4/$ex/$n', $ex, 'expired', '$q4', '{}', '\\x7b7d')" >/dev/null
done
dl=$(psql_q "select id from dead_letters where execution_id = $ex and redriven_at is null")
expect 409 POST "/api/v1/dead-letters/$dl/redrive"
assert_eq max_redrives "$(jq -r .error <<<"$CALL_BODY")" "the reason"
assert_contains "$CALL_BODY" "was redriven 3 times already: dead_letter.max_redrives is 3" "the detail"
assert_eq "failed|3|pending" "$(psql_q "select e.status || '|' || e.redrive_count || '|' || d.resolution
    from executions e join dead_letters d on d.execution_id = e.id where d.id = $dl")" "nothing changed"
rc=0
"$WARREN_BIN" dlq redrive "$dl" >/dev/null 2>"$TEST_TMP/err" || rc=$?
assert_eq 1 "$rc" "the CLI on the database URL refuses too"
assert_contains "$(cat "$TEST_TMP/err")" "dead_letter.max_redrives is 3" "the CLI's reason"
expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q4\"}}"
t4=$(jq -r .id <<<"$CALL_BODY")
wait_until 30 "[ \"\$(task_field $t4 status)\" = completed ]"
expect 200 GET "/api/v1/redrive-tasks/$t4"
assert_eq '0|1|{"max_redrives":1}' "$(jq -c -r '"\(.moved)|\(.skipped)|\(.skipped_by_reason)"' <<<"$CALL_BODY")" \
    "the task skips it"
expect 200 GET "/api/v1/redrive-tasks/$t4/items?result=skipped"
assert_eq "$dl|max_redrives" "$(jq -r '.items[0] | "\(.record_id)|\(.skip_reason)"' <<<"$CALL_BODY")" "the item says why"

log "bad input"
for body in '{"filter": {}, "canary_count": -1}' '{"filter": {}, "canary_count": 1.5}' \
    '{"filter": {}, "canary_count": 5, "max_failure_ratio": 1.5}' \
    '{"filter": {}, "canary_count": 5, "max_failure_ratio": -0.1}' \
    '{"filter": {}, "canary_count": 5, "max_failure_ratio": "half"}' \
    '{"filter": {}, "max_failure_ratio": 0.5}'; do
    expect 400 POST /api/v1/redrive-tasks "$body"
done
expect 400 GET "/api/v1/redrive-tasks/$t1/items?result=bogus"
expect 400 GET "/api/v1/redrive-tasks/$t1/items?outcome=bogus"
expect 400 GET "/api/v1/redrive-tasks/$t1/items?cursor=nope"
expect 404 GET /api/v1/redrive-tasks/999999999999/items
expect 404 POST /api/v1/redrive-tasks/999999999999/resume
expect 200 GET "/api/v1/redrive-tasks?status=paused_canary"
rc=0
"$WARREN_BIN" dlq redrive-all --max-failure-ratio 0.5 >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "a ratio without a canary is a usage error"
pass
