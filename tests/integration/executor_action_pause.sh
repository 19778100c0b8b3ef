#!/usr/bin/env bash
# Pausing an action (docs/flow-control.md, "Pausing an action"): POST
# /api/v1/actions/{ref}/pause (admin) records who and when; while paused, its executions, new
# and waiting, stay requested (wait_reason says paused) for several seconds while another
# action's run on the same worker; a pause is shared through the database (a second executor
# does not dispatch them either), a read key may not pause; GET /api/v1/actions and `warren
# action list` show it paused with its counts; warren_executions_waiting{reason="paused"}
# counts them and warren_action_paused_seconds names the action; the staleness detector leaves
# them alone; `warren action resume` (on the database) resumes it and they all complete.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
worker_env
# Two actions of the test's own, copies of core.echo, so that a pause touches no other test.
paused=$(unique_name flow.paused) other=$(unique_name flow.other)
handlers="$TEST_TMP/handlers"
mkdir -p "$handlers"
cp "$WARREN_SOURCE_DIR/handlers/core.echo" "$handlers/$paused"
cp "$WARREN_SOURCE_DIR/handlers/core.echo" "$handlers/$other"
export WARREN__WORKER__HANDLERS_DIR=$handlers
export WARREN__STALENESS__INTERVAL_S=1
export WARREN__STALENESS__REQUESTED_BY_ACTION="$paused=2"
export WARREN__ACTIONS="$paused: queue_timeout_s=600"
forget_executions flow.
on_exit "psql_q \"delete from action_pauses where action_ref in ('$paused', '$other')\" >/dev/null 2>&1"

api_start ex
start_live_worker w pause

# ---- pause: admin only; recorded with who and when; twice changes nothing ----
expect 403 POST "/api/v1/actions/$paused/pause" "" "$API_READ_KEY"
expect 400 POST "/api/v1/actions/.bad/pause" ""
expect 200 POST "/api/v1/actions/$paused/pause" ""
assert_eq "true true ops true" "$(jq -r '"\(.paused) \(.changed) \(.paused_by) \(.paused_at != null)"' <<<"$CALL_BODY")" \
    "the pause answer"
expect 200 POST "/api/v1/actions/$paused/pause" ""
assert_eq "true false" "$(jq -r '"\(.paused) \(.changed)"' <<<"$CALL_BODY")" "pausing again changes nothing"
assert_eq "ops|" "$(psql_q "select paused_by || '|' || coalesce(resumed_by, '') from action_pauses where action_ref = '$paused'")" \
    "the pause is a row"

# ---- while paused: its executions stay requested, the other action's run ----
ids=$(for _ in 1 2 3; do "$WARREN_BIN" submit "$paused"; done | paste -sd,)
# A second executor, which sees the same pause (the database's), schedules too.
exec_start ex2
others=$(for _ in 1 2 3; do "$WARREN_BIN" submit "$other"; done | paste -sd,)
wait_until 15 "[ \"\$(psql_q \"select count(*) from executions where id in ($others) and status = 'completed'\")\" = 3 ]"
sleep 3 # past the requested staleness threshold (2 s) of the paused action, too
assert_eq "requested requested requested" "$(psql_q "select string_agg(status, ' ' order by id) from executions where id in ($ids)")" \
    "a paused action's executions stay requested while another action's run"
assert_eq "0|0" "$(psql_q "select max(attempt) || '|' || (select count(*) from dead_letters where execution_id in ($ids))
                          from executions where id in ($ids)")" "never dispatched, not failed as stale"
first=${ids%%,*}
expect 200 GET "/api/v1/executions/$first" "" "$API_READ_KEY"
assert_contains "$(jq -r .wait_reason <<<"$CALL_BODY")" "paused: action '$paused' was paused by ops" "the wait reason"

# ---- GET /api/v1/actions and `warren action list` ----
expect 200 GET /api/v1/actions "" "$API_READ_KEY"
assert_eq "true|ops|3|600|true" \
    "$(jq -r --arg a "$paused" '.actions[] | select(.action_ref == $a) | "\(.paused)|\(.paused_by)|\(.counts.requested)|\(.limits.queue_timeout_s)|\(.configured)"' <<<"$CALL_BODY")" \
    "GET /api/v1/actions: paused, by whom, its requested count and its limits"
assert_eq "false|0|null" \
    "$(jq -r --arg a "$other" '.actions[] | select(.action_ref == $a) | "\(.paused)|\(.counts.requested)|\(.limits.queue_timeout_s)"' <<<"$CALL_BODY")" \
    "the other action: offered by the worker, not paused"
listed=$("$WARREN_BIN" action list)
assert_contains "$(grep -F "$paused" <<<"$listed")" "yes" "warren action list: paused"
assert_eq "$(jq -c --arg a "$paused" '.actions[] | select(.action_ref == $a) | del(.counts)' <<<"$CALL_BODY")" \
    "$("$WARREN_BIN" action list --json | jq -c --arg a "$paused" '.[] | select(.action_ref == $a) | del(.counts)')" \
    "warren action list --json: the API's document"

# ---- the metrics (the gauges refresh every 10 s) ----
wait_until 15 "curl -sS '$API/metrics' | grep -qx 'warren_executions_waiting{reason=\"paused\"} 3'"
curl -sS "$API/metrics" | grep -q "^warren_action_paused_seconds{action=\"$paused\"} " ||
    fail "warren_action_paused_seconds names the paused action"

# ---- resume with the CLI: they all complete ----
run_warren resume action resume "$paused"
assert_eq "0" "$RUN_RC" "warren action resume ($RUN_ERR)"
assert_contains "$(cat "$TEST_TMP/resume.out")" "$paused: not paused" "warren action resume: what it says"
wait_until 15 "[ \"\$(psql_q \"select count(*) from executions where id in ($ids) and status = 'completed'\")\" = 3 ]"
assert_eq "false|true" "$(psql_q "select (resumed_at is null) || '|' || (resumed_by like 'cli:%') from action_pauses where action_ref = '$paused'")" \
    "the resume is recorded, by the CLI's operator"
expect 200 GET /api/v1/actions "" "$API_READ_KEY"
assert_eq "false" "$(jq -r --arg a "$paused" '.actions[] | select(.action_ref == $a) | .paused' <<<"$CALL_BODY")" \
    "GET /api/v1/actions: resumed"
pass
