#!/usr/bin/env bash
# Schedules and priorities (docs/flow-control.md), with the requested-staleness threshold of the
# actions used at 2 s: delay_s 3 (API) and run_at 3 s ahead (`warren submit --at`, and in a batch)
# are not scheduled before their time, from the rows' created/due/scheduled/started times, and
# are not failed as stale while they wait; a retry whose backoff (5 s) is longer than that
# threshold still runs, while an execution no worker takes does go stale; with one worker
# slot, 20 priority-1 executions and then one priority-9: the priority-9 one starts next, from
# the rows' start times; priority and due_at in GET and `warren get`; bad fields answer 400
# naming the field, and `warren submit` refuses them.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
worker_env
export WARREN__WORKER__MAX_CONCURRENCY=1
export WARREN__STALENESS__INTERVAL_S=1
absent=$(unique_name flow.absent) # an action no worker offers: it stays requested
export WARREN__STALENESS__REQUESTED_BY_ACTION="core.echo=2,core.fail=2,$absent=2"
export WARREN__RETRY__BASE_MS=5000 WARREN__RETRY__JITTER=none
forget_executions core.
forget_executions "$absent"

api_start ex
start_live_worker w sched

# times ID: "DUE SCHED START TOOK": seconds from created_at to due_at, whether it was scheduled
# and started no earlier than due_at, seconds from created_at to started_at.
times() {
    psql_q "select round(extract(epoch from due_at - created_at)::numeric, 1) || ' '
                || (scheduled_at >= due_at) || ' ' || (started_at >= due_at) || ' '
                || round(extract(epoch from started_at - created_at)::numeric, 1)
            from executions where id = $1"
}

# ---- validation: 400 naming the field; the CLI refuses the same ----
# refused FIELDS WANT: a submission of core.echo with FIELDS answers 400 whose detail has WANT.
refused() {
    expect 400 POST /api/v1/executions "{\"action_ref\": \"core.echo\", $1}"
    assert_contains "$(jq -r .detail <<<"$CALL_BODY")" "$2" "refused: $1"
}
refused '"run_at": "2026-05-01T14:00:00Z", "delay_s": 3' "run_at and delay_s: give one of them"
refused '"run_at": "tomorrow"' "run_at: expected an RFC 3339 date-time"
refused '"delay_s": -1' "field 'delay_s' is -1"
refused '"priority": 10' "field 'priority' is 10, expected 0..9"
refused '"priority": "high"' "field 'priority': expected an integer"
expect 400 POST /api/v1/executions '[{"action_ref": "core.echo"}, {"action_ref": "core.echo", "delay_s": 1.5}]'
assert_contains "$CALL_BODY" "[1].delay_s" "a batch item's delay_s: named with its index"
before=$(psql_q "select count(*) from executions")
run_warren cli-both submit core.echo --at 2026-05-01T14:00:00Z --in 3
assert_eq "2" "$RUN_RC" "warren submit --at and --in: usage error"
run_warren cli-prio submit core.echo --priority 11
assert_eq "2" "$RUN_RC" "warren submit --priority 11"
assert_contains "$RUN_ERR" "--priority wants a whole number from 0 to 9" "warren submit --priority 11: why"
run_warren cli-at submit core.echo --at 'next week'
assert_eq "2" "$RUN_RC" "warren submit --at 'next week'"
assert_eq "$before" "$(psql_q "select count(*) from executions")" "nothing was inserted"

# ---- `warren submit --in --priority`, on the database and over the API ----
far_db=$("$WARREN_BIN" submit core.echo --in 600 --priority 2)
far_api=$(WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" submit core.echo --in 600 \
    --priority 8)
assert_eq "600 2|600 8" "$(psql_q "select string_agg(extract(epoch from due_at - created_at)::int || ' '
                                   || priority, '|' order by id) from executions where id in ($far_db, $far_api)")" \
    "--in and --priority, on the database and over the API"
psql_q "update executions set status = 'cancelled' where id in ($far_db, $far_api)" >/dev/null

# ---- delay_s 3 over the API, run_at 3 s ahead with the CLI and in a batch ----
expect 201 POST /api/v1/executions '{"action_ref": "core.echo", "delay_s": 3, "priority": 7}'
delayed=$(jq -r .id <<<"$CALL_BODY")
assert_eq "7" "$(jq -r .priority <<<"$CALL_BODY")" "the new row's priority"
# While it waits: requested, with why, in GET and `warren get`.
expect 200 GET "/api/v1/executions/$delayed" "" "$API_READ_KEY"
assert_eq "requested 7 true" "$(jq -r '"\(.status) \(.priority) \(.due_at != null)"' <<<"$CALL_BODY")" \
    "GET shows priority and due_at"
assert_contains "$(jq -r .wait_reason <<<"$CALL_BODY")" "scheduled: first attempt due at" "GET's wait reason"
got=$("$WARREN_BIN" get "$delayed")
assert_contains "$got" "priority       7" "warren get: the priority"
assert_contains "$got" "(in " "warren get: the due time is to come"
got=$(WARREN_API_URL=$API WARREN_API_KEY=$API_READ_KEY "$WARREN_BIN" get "$delayed")
assert_contains "$got" "priority       7" "warren get over the API: the priority"
run_at=$(date -u -d '+3 sec' +%Y-%m-%dT%H:%M:%S.%3NZ)
at_id=$("$WARREN_BIN" submit core.echo --at "$run_at")
expect 201 POST /api/v1/executions "[{\"action_ref\": \"core.echo\"}, {\"action_ref\": \"core.echo\", \"run_at\": \"$run_at\"}]"
now_id=$(jq -r '.ids[0]' <<<"$CALL_BODY")
batch_at=$(jq -r '.ids[1]' <<<"$CALL_BODY")
assert_eq "t" "$(psql_q "select due_at = '$run_at'::timestamptz from executions where id = $at_id")" \
    "--at is the due time"
assert_eq "t" "$(psql_q "select due_at = '$run_at'::timestamptz from executions where id = $batch_at")" \
    "a batch item's run_at is its due time"
wait_until 10 "[ \"\$(exec_field $now_id status)\" = completed ]"
wait_until 15 "[ \"\$(psql_q \"select count(*) from executions where id in ($delayed, $at_id, $batch_at) and status = 'completed'\")\" = 3 ]"
# delay_s 3: due 3 s after it was created, scheduled and started no earlier (the DB's times).
read -r due sched_ok start_ok took <<<"$(times "$delayed")"
log "delay_s 3: due +$due s, started +$took s"
assert_eq "3.0 true true" "$due $sched_ok $start_ok" "delay_s 3: due 3 s on, not scheduled or started before"
for id in $at_id $batch_at; do
    assert_eq "true true" "$(psql_q "select (scheduled_at >= '$run_at'::timestamptz) || ' ' || (started_at >= '$run_at'::timestamptz)
                               from executions where id = $id")" "run_at: $id not scheduled or started before $run_at"
done
assert_eq "0" "$(psql_q "select count(*) from dead_letters where execution_id in ($delayed, $at_id, $batch_at)")" \
    "waiting past the requested threshold (2 s) for their time was not staleness"

# ---- a retry whose backoff (5 s) is longer than the requested threshold (2 s) still runs ----
stale=$("$WARREN_BIN" submit "$absent")
retried=$("$WARREN_BIN" submit core.fail --params '{"code": 75, "until_attempt": 2}' --max-attempts 2 \
    --retry-on tempfail)
wait_until 10 "[ \"\$(exec_field $stale status)\" = failed ]"
assert_eq "staleness_timeout" "$(psql_q "select reason from dead_letters where execution_id = $stale")" \
    "the detector is on: an execution no worker takes goes stale"
wait_until 20 "[ \"\$(exec_field $retried status)\" = completed ]"
assert_eq "2 1" "$(psql_q "select attempt || ' ' || retries from executions where id = $retried")" \
    "the retry ran as attempt 2"
gap=$(psql_q "select round(extract(epoch from b.scheduled_at - a.ended_at)::numeric, 1)
              from execution_attempt_history a join execution_attempt_history b
                on b.execution_id = a.execution_id and b.attempt = 2
              where a.execution_id = $retried and a.attempt = 1")
log "retry: waited $gap s in requested (threshold 2 s)"
awk -v g="$gap" 'BEGIN { exit !(g >= 4.9) }' || fail "the retry went out after $gap s, before its backoff"
assert_eq "0" "$(psql_q "select count(*) from dead_letters where execution_id = $retried")" \
    "no staleness_timeout for the retry"

# ---- priorities: one slot busy, 20 priority-1 then one priority-9: the 9 starts next ----
expect 201 POST /api/v1/executions '{"action_ref": "core.sleep", "params": {"seconds": 2}}'
blocker=$(jq -r .id <<<"$CALL_BODY")
wait_until 10 "[ \"\$(exec_field $blocker status)\" = running ]"
batch=$(jq -cn '[range(20) | {action_ref: "core.sleep", params: {seconds: 0}, priority: 1}]')
expect 201 POST /api/v1/executions "$batch"
lows=$(jq -r '.ids | join(",")' <<<"$CALL_BODY")
expect 201 POST /api/v1/executions '{"action_ref": "core.sleep", "params": {"seconds": 0}, "priority": 9}'
high=$(jq -r .id <<<"$CALL_BODY")
assert_eq "running" "$(exec_field "$blocker" status)" "the slot was still taken when the 9 came"
wait_until 60 "[ \"\$(psql_q \"select count(*) from executions where id in ($lows, $high) and status = 'completed'\")\" = 21 ]"
order=$(psql_q "select string_agg(priority::text, ',' order by started_at, id) from executions
                where id in ($blocker, $lows, $high)")
log "start order by priority: $order"
assert_eq "5,9,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1" "$order" "the priority-9 execution ran next"
assert_eq "$lows" "$(psql_q "select string_agg(id::text, ',' order by started_at) from executions where id in ($lows)")" \
    "equal priorities in due order"
pass
