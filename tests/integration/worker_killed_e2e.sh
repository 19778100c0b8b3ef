#!/usr/bin/env bash
# A worker killed with SIGKILL loses no execution, end to end with the real executor, worker and
# CLI: what it was running is abandoned by the timeout monitor once its heartbeat goes stale, and
# a submission pinned to it afterwards (`warren submit --worker W --wait`) expires from its queue
# through the dead-letter exchange and fails with "Worker queue TTL expired" within the TTL plus a
# small bound, with the x-death in the result.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
TTL_MS=2000
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=$TTL_MS

exec_start ex
start_live_worker w doomed
WORKER_PID=$BG_PID

# Something running on it when it dies.
run_id=$("$WARREN_BIN" submit core.sleep --params '{"seconds": 60}' --worker "$w")
wait_until 15 "[ \"\$(exec_field $run_id status)\" = running ]"
kill -KILL "$WORKER_PID"
wait "$WORKER_PID" 2>/dev/null || true

# The running execution: abandoned once the heartbeat is stale (factor 3 x 1 s) and the monitor runs.
wait_until 20 "[ \"\$(exec_field $run_id status)\" = abandoned ]"
assert_contains "$(exec_field "$run_id" error)" "$w" "abandonment names the worker"
assert_eq worker_stale "$(psql_q "select reason from dead_letters where execution_id = $run_id")" \
    "dead-letter row of the abandoned execution"

# A new submission pinned to the dead worker waits in its queue, expires and is failed.
start=$(date +%s%N)
rc=0
"$WARREN_BIN" submit core.echo --params '{"x": 1}' --worker "$w" --wait --wait-timeout 30 --json \
    >"$TEST_TMP/submit.json" 2>"$TEST_TMP/submit.err" || rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
assert_eq 1 "$rc" "submit --wait exit status for a failed execution"
log "failed after ${elapsed_ms} ms (TTL ${TTL_MS} ms)"
[ "$elapsed_ms" -lt $((TTL_MS + 4000)) ] || fail "expiry took ${elapsed_ms} ms, want under TTL + 4 s"
row=$(cat "$TEST_TMP/submit.json")
id=$(jq -r .id <<<"$row")
assert_eq "failed|Worker queue TTL expired|$w" "$(jq -r '"\(.status)|\(.error)|\(.worker)"' <<<"$row")" "final row"
assert_eq "Worker queue TTL expired|expired|worker.$w.executions|1" \
    "$(jq -r '.result | "\(.error)|\(.x_death[0].reason)|\(.x_death[0].queue)|\(.x_death[0].count)"' <<<"$row")" \
    "x-death in the result"
assert_eq expired "$(psql_q "select reason from dead_letters where execution_id = $id")" "dead-letter row"
assert_eq 0 "$(queue_messages "worker.$w.executions")" "nothing left in the dead worker's queue"
assert_eq 0 "$(queue_messages "$TOPO_DLQ")" "dead-letter queue drained"

exec_stop "$EXEC_PID" ex
pass
