#!/usr/bin/env bash
# Bulk redrive tasks (docs/dead-letters.md, "Bulk redrive"): 2,000 records at 200/s take 10 s
# (± 20 %) and every one becomes a new attempt; a task cancelled midway stops with moved equal to
# the records it redrove; a task survives the executor killed with SIGKILL and finishes under
# the next one without redriving a record twice; one active task per source; bad input is 400.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
action=$(unique_name act) # no worker offers it: redriven executions wait as requested
forget_executions "$action"
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0 WARREN__STALENESS__INTERVAL_S=0
api_start ex

# records QUEUE N: N failed executions, each with a pending expired record from QUEUE.
records() { redrive_records "$1" "$2" "$action"; }
redriven() { # QUEUE: records redriven, and executions given a new attempt
    psql_q "select count(*) filter (where d.redriven_at is not null) || '/' ||
                   count(*) filter (where e.status = 'requested' and e.redrive_count = 1)
            from dead_letters d join executions e on e.id = d.execution_id where d.queue = '$1'"
}

log "2,000 records at 200/s"
q1=$(unique_name q1)
records "$q1" 2000
expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q1\"}, \"rate\": 200}"
t1=$(jq -r .id <<<"$CALL_BODY")
assert_eq "running|2000|0|ops|$q1" "$(jq -r '"\(.status)|\(.to_move)|\(.moved)|\(.created_by)|\(.source)"' <<<"$CALL_BODY")" "started"
start=$(date +%s%N)
expect 409 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q1\", \"reason\": \"timeout\"}}"
assert_contains "$CALL_BODY" "redrive task $t1 is active on source '$q1'" "one active task per source"
wait_until 30 "[ \"\$(task_field $t1 status)\" = completed ]"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
log "2,000 records in ${elapsed_ms} ms"
{ [ "$elapsed_ms" -ge 8000 ] && [ "$elapsed_ms" -le 12000 ]; } ||
    fail "2,000 records at 200/s took ${elapsed_ms} ms, expected 10 s ± 20 %"
assert_eq "2000|0" "$(task_field "$t1" moved)|$(task_field "$t1" skipped)" "moved"
assert_eq "2000/2000" "$(redriven "$q1")" "every record redriven once, every execution a new attempt"
assert_eq "ops (redrive task $t1)" "$(psql_q "select distinct resolved_by from dead_letters where queue = '$q1'")" \
    "resolved by the task's creator"

log "cancelled midway: what moved stays moved, and the count says how many"
q2=$(unique_name q2)
records "$q2" 1000
expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q2\"}, \"rate\": 100}"
t2=$(jq -r .id <<<"$CALL_BODY")
wait_until 10 "[ \"\$(task_field $t2 moved)\" -ge 200 ]"
expect 200 POST "/api/v1/redrive-tasks/$t2/cancel"
assert_eq cancelling "$(jq -r .status <<<"$CALL_BODY")" "cancel answer"
wait_until 10 "[ \"\$(task_field $t2 status)\" = cancelled ]"
moved=$(task_field "$t2" moved)
sleep 0.5
assert_eq "$moved/$moved" "$(redriven "$q2")" "moved is what was redriven"
{ [ "$moved" -gt 0 ] && [ "$moved" -lt 1000 ]; } || fail "cancelled task moved $moved of 1000"
assert_eq "$moved" "$(task_field "$t2" moved)" "nothing moves after the cancel"
expect 409 POST "/api/v1/redrive-tasks/$t2/cancel"

log "the executor killed with SIGKILL: the next one finishes the task"
q3=$(unique_name q3)
records "$q3" 600
expect 201 POST /api/v1/redrive-tasks "{\"filter\": {\"queue\": \"$q3\"}, \"rate\": 100}"
t3=$(jq -r .id <<<"$CALL_BODY")
wait_until 10 "[ \"\$(task_field $t3 moved)\" -ge 100 ]"
kill -KILL "$EXEC_PID"
wait "$EXEC_PID" 2>/dev/null || true
row=$(psql_q "select status || '|' || moved from redrive_tasks where id = $t3")
assert_eq running "${row%|*}" "still running after the kill"
assert_eq "${row#*|}/${row#*|}" "$(redriven "$q3")" "the committed count is what was redriven"
api_start ex2
wait_until 30 "[ \"\$(task_field $t3 status)\" = completed ]"
assert_eq "600|0" "$(task_field "$t3" moved)|$(task_field "$t3" skipped)" "moved after the restart"
assert_eq "600/600" "$(redriven "$q3")" "no record redriven twice"

log "the CLI, and bad input"
q4=$(unique_name q4)
out=$(WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" dlq redrive-all --queue "$q4" --rate 50 --json)
assert_eq "completed|0|50" "$(jq -r '"\(.status)|\(.to_move)|\(.rate)"' <<<"$out")" "a filter matching nothing completes at once"
out=$("$WARREN_BIN" dlq task "$t1")
assert_contains "$out" "redrive task $t1: completed, moved 2000 of 2000" "dlq task on the database URL"
for rate in -1 0 501 100000 '"fast"' 1.5; do
    expect 400 POST /api/v1/redrive-tasks "{\"filter\": {}, \"rate\": $rate}"
done
expect 400 POST /api/v1/redrive-tasks '{"filter": {"reason": "bogus"}}'
expect 400 POST /api/v1/redrive-tasks '{"filter": {"resolution": "sometimes"}}'
expect 400 POST /api/v1/redrive-tasks '{"filter": {}, "speed": 1}'
expect 400 POST /api/v1/redrive-tasks "{\"filter\": {\"ids\": [$(seq -s, 1 1001)]}}"
expect 400 POST /api/v1/redrive-tasks '{"filter": {}, "worker": "a b"}'
expect 403 POST /api/v1/redrive-tasks '{"filter": {}}' "$API_READ_KEY"
expect 400 GET "/api/v1/redrive-tasks?status=paused"
expect 400 GET /api/v1/redrive-tasks/x
expect 404 GET /api/v1/redrive-tasks/999999999999
expect 404 POST /api/v1/redrive-tasks/999999999999/cancel
expect 200 GET "/api/v1/redrive-tasks?status=completed&limit=1000"
assert_contains "$(jq -c '[.tasks[].id]' <<<"$CALL_BODY")" "$t1" "list by status"
rc=0
"$WARREN_BIN" dlq redrive-all --rate 501 >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "a huge rate is a usage error"
pass
