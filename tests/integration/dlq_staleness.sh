#!/usr/bin/env bash
# The staleness detector with short test thresholds (docs/dead-letters.md, "Staleness"): a
# running execution passes staleness.warning_pct of its per-action threshold (a log line naming
# it, warren_staleness_warnings_total, health "warning" in GET /api/v1/staleness and `warren
# staleness`), then its threshold: abandoned, attempt-fenced, with a staleness_timeout record; a
# requested one fails the same way; an action without a threshold stays healthy; bad input is 400.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
new_worker w stale
action=$(unique_name act)
slow=$(unique_name slow)
forget_executions "$action"
forget_executions "$slow"
export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0 # the monitor would abandon the fake running row
export WARREN__STALENESS__INTERVAL_S=1 WARREN__STALENESS__WARNING_PCT=50
export WARREN__STALENESS__RUNNING_BY_ACTION="$action=6"
export WARREN__STALENESS__REQUESTED_BY_ACTION="$action=6,$slow=3600"
api_start ex

run_id=$(psql_q "insert into executions (action_ref, status, worker, attempt, started_at)
                 values ('$action', 'running', '$w', 2, now()) returning id")
req_id=$(new_execution "$action")
calm_id=$(new_execution "$slow") # no worker offers it: it stays requested
health() { # ID: its health in GET /api/v1/staleness
    call GET "/api/v1/staleness?limit=1000" | cut -d' ' -f2- |
        jq -r --argjson id "$1" '.executions[] | select(.id == $id) | .health'
}

log "warning from 50 % of the threshold on"
assert_eq healthy "$(health "$run_id")" "a fresh running execution"
wait_until 10 "[ \"\$(health $run_id)\" = warning ]"
wait_log ex "\"msg\":\"execution nearing its staleness threshold\",\"execution_id\":\"$run_id\"" 5
row=$(WARREN_API_URL=$API WARREN_API_KEY=$API_READ_KEY "$WARREN_BIN" staleness --health warning --json |
    jq -c --argjson id "$run_id" '.executions[] | select(.id == $id) | [.status, .threshold_s, .health]')
assert_eq '["running",6,"warning"]' "$row" "warren staleness over the API"
row=$("$WARREN_BIN" staleness --json | jq -c --argjson id "$calm_id" '.executions[] | select(.id == $id) | [.status, .threshold_s, .health]')
assert_eq '["requested",3600,"healthy"]' "$row" "warren staleness on the database URL"
assert_contains "$(curl -sS "$API/metrics")" "warren_staleness_warnings_total" "the warning metric"
[ "$(curl -sS "$API/metrics" | awk '/^warren_staleness_warnings_total/ {print $2}')" -ge 1 ] ||
    fail "warren_staleness_warnings_total did not count the warning"
assert_eq 1 "$(grep -c "\"msg\":\"execution nearing its staleness threshold\",\"execution_id\":\"$run_id\"" "$(bg_log ex)")" \
    "one warning line per status and attempt"

log "stale past 100 %: running -> abandoned, requested -> failed, each with a record"
wait_until 15 "[ \"\$(exec_field $run_id status)\" = abandoned ]"
wait_until 15 "[ \"\$(exec_field $req_id status)\" = failed ]"
assert_contains "$(exec_field "$run_id" error)" "Stale: running for" "the abandoned row's error"
assert_eq "staleness_timeout|staleness_timeout|pending|2|running" \
    "$(psql_q "select reason, investigation_reason, resolution, snapshot->>'attempt', snapshot->>'status'
               from dead_letters where execution_id = $run_id")" "the running one's record"
assert_eq "staleness_timeout|pending" "$(psql_q "select investigation_reason, resolution from dead_letters
    where execution_id = $req_id")" "the requested one's record"
assert_eq requested "$(exec_field "$calm_id" status)" "an action with a long threshold stays"
wait_log ex "\"msg\":\"execution stale: ended, with a staleness_timeout record\",\"execution_id\":\"$run_id\"" 5
[ "$(curl -sS "$API/metrics" | awk '/^warren_staleness_timeouts_total/ {print $2}')" -ge 2 ] ||
    fail "warren_staleness_timeouts_total did not count both"

log "bad input"
expect 400 GET "/api/v1/staleness?health=sick"
expect 400 GET "/api/v1/staleness?limit=0"
expect 400 GET "/api/v1/staleness?status=running"
rc=0
"$WARREN_BIN" staleness --health sick >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "an unknown health is a usage error"
pass
