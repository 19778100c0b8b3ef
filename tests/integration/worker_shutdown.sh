#!/usr/bin/env bash
# Graded shutdown. SIGTERM: the consumer is cancelled (new dispatches stay queued), the running
# execution finishes and is reported, the last heartbeat says "offline", exit 0. Past
# worker.shutdown_timeout_s the handler is stopped and reported failed. A second SIGTERM exits at
# once, killing the handler.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

# wait_exit PID TIMEOUT_S: wait for the process to end by itself; EXIT_RC gets its status.
wait_exit() {
    wait_until "$2" "! kill -0 $1 2>/dev/null"
    EXIT_RC=0
    wait "$1" || EXIT_RC=$?
}

# sleeping_worker NAME PREFIX EXEC_ID: a new worker running a long core.sleep execution; sets
# SLEEPER_PID, SLEEPER_ID (the worker id) and SLEEPER_SECS (names the handler's sleep process).
sleeping_worker() {
    new_worker SLEEPER_ID "$2"
    # shellcheck disable=SC2153 # set by new_worker (printf -v)
    start_worker "$1" "$SLEEPER_ID"
    SLEEPER_PID=$BG_PID
    SLEEPER_SECS="4$((RANDOM % 10)).$RANDOM"
    publish_dispatch "$SLEEPER_ID" "$(dispatch_body "$3" "$SLEEPER_ID" core.sleep "{\"seconds\": $SLEEPER_SECS}")"
    wait_msg "$TOPO_RESULTS" "$(is_status "$3")" >/dev/null
    wait_until 5 pgrep -f "sleep $SLEEPER_SECS"
}

last_heartbeat() {
    collect "$TOPO_HEARTBEATS"
    msgs "$TOPO_HEARTBEATS" "$(is_heartbeat "$1")" | jq -c '.[-1].body.payload'
}

# 1. Drain: the running execution finishes.
new_worker w drain
wq="worker.$w.executions"
start_worker worker "$w"
pid=$BG_PID
id=$(exec_id)
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.sleep '{"seconds": 2}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$id")" >/dev/null
kill -TERM "$pid"
wait_log worker '"msg":"consumer cancelled"' 5
assert_eq 0 "$(rmq list_queues -s name consumers | awk -v q="$wq" '$1 == q { print $2 }')" "no consumer while draining"
publish_dispatch "$w" "$(dispatch_body "$((id + 1))" "$w" core.noop '{}')"
wait_exit "$pid" 15
assert_eq 0 "$EXIT_RC" "exit status after draining"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" | jq -c .body.payload)
assert_eq 'completed {"slept":2}' "$(jq -rc '"\(.status) \(.result | tojson)"' <<<"$p")" "the running execution finished"
assert_eq 1 "$(queue_messages "$wq")" "the dispatch sent while draining waits in the queue"
collect "$TOPO_RESULTS"
assert_eq 0 "$(msgs "$TOPO_RESULTS" "$(is_status "$((id + 1))")" | jq length)" "and was not started"
assert_eq 'offline 0' "$(last_heartbeat "$w" | jq -r '"\(.status) \(.running)"')" "final heartbeat"
stopping_busy=$(msgs "$TOPO_HEARTBEATS" "$(is_heartbeat "$w") and .body.payload.status == \"stopping\" and .body.payload.running == 1")
assert_eq true "$(jq 'length >= 1' <<<"$stopping_busy")" "a stopping heartbeat while the execution still ran"
assert_contains "$(worker_stats worker)" '"completed":"1"'

# 2. The drain deadline: the handler is stopped and its end reported.
export WARREN__WORKER__SHUTDOWN_TIMEOUT_S=1
sleeping_worker worker2 deadline "$((id + 2))"
pid=$SLEEPER_PID
kill -TERM "$pid"
wait_exit "$pid" 15
assert_eq 0 "$EXIT_RC" "exit status after the deadline"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 2))")" | jq -c .body.payload)
assert_eq "failed terminated: worker shutting down" "$(jq -r '"\(.status) \(.error)"' <<<"$p")" "stopped at the deadline"
if pgrep -f "sleep $SLEEPER_SECS" >/dev/null; then fail "handler survived the shutdown"; fi
assert_contains "$(cat "$(bg_log worker2)")" '"msg":"shutdown timeout: stopping the running handlers"'
unset WARREN__WORKER__SHUTDOWN_TIMEOUT_S

# 3. A second SIGTERM: out at once, the handler killed, nothing reported for it.
sleeping_worker worker3 fast "$((id + 3))"
pid=$SLEEPER_PID
kill -TERM "$pid"
wait_log worker3 '"msg":"consumer cancelled"' 5
kill -TERM "$pid"
wait_exit "$pid" 5
assert_eq 1 "$EXIT_RC" "exit status of an immediate exit with work abandoned"
if pgrep -f "sleep $SLEEPER_SECS" >/dev/null; then fail "handler survived the immediate exit"; fi
collect "$TOPO_RESULTS"
assert_eq 0 "$(msgs "$TOPO_RESULTS" "$(is_completion "$((id + 3))")" | jq length)" "no completion"
assert_contains "$(worker_stats worker3)" '"abandoned":"1"'
pass
