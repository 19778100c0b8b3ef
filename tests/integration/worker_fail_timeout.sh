#!/usr/bin/env bash
# Failures and timeouts are reported like successes: core.fail gives status failed with its exit
# code and stderr tail; core.sleep past its timeout gives status timeout and its process group is
# gone; an unknown action fails without a process.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

new_worker w fail
wq="worker.$w.executions"
start_worker worker "$w"

id=$(exec_id)
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.fail '{"code": 7}' 2)"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" | jq -c .body.payload)
assert_eq "failed 2 7 0 null" "$(jq -r '"\(.status) \(.attempt) \(.exit_code) \(.signal) \(.result)"' <<<"$p")" \
    "failed payload: $p"
assert_eq "handler exited with code 7" "$(jq -r .error <<<"$p")" "error"
assert_contains "$(jq -r .stderr_tail <<<"$p")" "core.fail: failing on purpose with exit code 7 (execution $id)"
wait_msg "$TOPO_RESULTS" "$(is_status "$id")" >/dev/null

# A unique sleep length names the handler's process, so the test can watch it.
secs="41.$RANDOM"
tid=$((id + 1))
publish_dispatch "$w" "$(dispatch_body "$tid" "$w" core.sleep "{\"seconds\": $secs}" 1 1)"
wait_msg "$TOPO_RESULTS" "$(is_status "$tid")" >/dev/null
wait_until 5 pgrep -f "sleep $secs"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$tid")" 15 | jq -c .body.payload)
assert_eq "timeout 15" "$(jq -r '"\(.status) \(.signal)"' <<<"$p")" "timeout payload: $p"
assert_eq "timed out after 1 s" "$(jq -r .error <<<"$p")" "timeout error"
# libevent arms timers from its cached loop time, so a 1 s timeout can measure a few ms short.
assert_eq true "$(jq '.duration_ms >= 950 and .duration_ms < 5000' <<<"$p")" "duration: $p"
if pgrep -f "sleep $secs" >/dev/null; then fail "the handler's process group outlived its timeout"; fi

uid=$((id + 2))
publish_dispatch "$w" "$(dispatch_body "$uid" "$w" no.such.action '{}')"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$uid")" | jq -c .body.payload)
assert_eq "failed -1" "$(jq -r '"\(.status) \(.exit_code)"' <<<"$p")" "unknown action: $p"
assert_contains "$(jq -r .error <<<"$p")" "no handler for action 'no.such.action'"

wait_settled "$wq"
stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"failed":"2"'
assert_contains "$WORKER_STATS" '"timeout":"1"'
pass
