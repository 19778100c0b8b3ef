#!/usr/bin/env bash
# A dispatch is never started past its start deadline: one that arrives late, and one held
# while the worker is busy until its deadline passes, are dead-lettered (x-death reason
# rejected) without running or reporting; one whose deadline is ahead runs as usual.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__WORKER__MAX_CONCURRENCY=1

new_worker w deadline
wq="worker.$w.executions"
start_worker worker "$w"
id=$(exec_id)

# with_deadline BODY SECONDS: the dispatch with a start_deadline SECONDS from now (may be < 0).
with_deadline() {
    jq -c --arg d "$(date -u -d "@$(($(date +%s) + $2))" +%Y-%m-%dT%H:%M:%S.000Z)" \
        '.payload.start_deadline = $d' <<<"$1"
}

# Too late on arrival.
publish_dispatch "$w" "$(with_deadline "$(dispatch_body "$id" "$w" core.echo '{}')" -5)"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(queue_messages "'"$TOPO_DLQ"'")" = 1 ]'
wait_log worker '"msg":"start deadline passed before the dispatch could start; dead-lettered".*"execution_id":"'"$id"'"' 5

# Held behind a running handler (one slot) until its deadline passes; the next one's deadline
# is far ahead, so it runs once the slot frees.
publish_dispatch "$w" "$(dispatch_body "$((id + 1))" "$w" core.sleep '{"seconds": 3}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$((id + 1))")" >/dev/null
publish_dispatch "$w" "$(with_deadline "$(dispatch_body "$((id + 2))" "$w" core.echo '{}')" 1)"
publish_dispatch "$w" "$(with_deadline "$(dispatch_body "$((id + 3))" "$w" core.echo '{"ok": 1}')" 600)"
wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 3))")" 15 >/dev/null
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(queue_messages "'"$TOPO_DLQ"'")" = 2 ]'

collect "$TOPO_DLQ"
dead=$(msgs "$TOPO_DLQ" true)
assert_eq '["rejected"]' "$(jq -c '[.[].properties.headers["x-death"][0].reason] | unique' <<<"$dead")" "x-death reasons"
assert_eq "[$id,$((id + 2))]" "$(jq -c '[.[].body.payload.execution_id] | sort' <<<"$dead")" "the late ones"
collect "$TOPO_RESULTS"
assert_eq 0 "$(msgs "$TOPO_RESULTS" "(.body.payload.execution_id == $id) or (.body.payload.execution_id == $((id + 2)))" | jq length)" \
    "no report for a dispatch that never started"
wait_settled "$wq"
stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"past_deadline":"2"'
assert_contains "$WORKER_STATS" '"started":"2"'
pass
