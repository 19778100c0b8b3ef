#!/usr/bin/env bash
# A broker that blocks publishers (memory alarm: rabbitmqctl set_vm_memory_high_watermark) for
# 20 s never holds the executor's loop (issue 18): /livez answers within 100 ms throughout,
# /readyz reports the blocked publisher, the worker is never judged gone for the heartbeats the
# alarm held back and its heartbeats are recorded again once it clears, and every execution
# submitted before and during the alarm completes after it.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__LOG__LEVEL=info
# Staleness well beyond the alarm: the alarm holds heartbeats back, it does not lose workers.
export WARREN__EXECUTOR__HEARTBEAT_STALE_FACTOR=40
export WARREN__MESSAGE_QUEUE__RABBITMQ__PUBLISH_TIMEOUT_MS=3000
on_exit 'rmq set_vm_memory_high_watermark 0.4 >/dev/null 2>&1 || true'
# shellcheck disable=SC2317 # called in wait_until's condition
mem_alarm() { mgmt_get "nodes/$WARREN_RABBIT_NODE" | jq -r .mem_alarm; }

exec_start ex
API="http://127.0.0.1:$(http_port ex)"
start_live_worker w blk
before=$(for _ in 1 2 3 4 5; do new_execution core.noop "$w"; done | paste -sd,)
wait_until 15 "[ \"\$(psql_q \"select count(*) from executions where id in ($before)
    and status = 'completed'\")\" = 5 ]"

python3 "$WARREN_SOURCE_DIR/tests/lib/api_load.py" "$(http_port ex)" livez 90 >"$TEST_TMP/livez.ms" &
LIVEZ=$!
on_exit "kill $LIVEZ 2>/dev/null || true"

log "memory alarm: publishers blocked for 20 s"
rmq set_vm_memory_high_watermark absolute 1MB >/dev/null
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(mem_alarm)" = true ]'
alarm_at=$(psql_q "select now()")
during=$(for _ in 1 2 3 4 5 6 7 8 9 10; do new_execution core.noop "$w"; done | paste -sd,)
wait_log ex 'connection blocked by broker' 15
wait_until 10 "curl -s '$API/readyz' | jq -e '.checks.publisher == \"blocked\"' >/dev/null"
readyz=$(curl -s "$API/readyz")
assert_contains "$readyz" "the broker blocked publishing"
log "/readyz: $(jq -c '{status, publisher: .checks.publisher}' <<<"$readyz")"
# The rest of the 20 s: the loop keeps answering.
sleep 15
assert_eq online "$(psql_q "select status from workers where id = '$w'")" "worker during the alarm"
rmq set_vm_memory_high_watermark 0.4 >/dev/null
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(mem_alarm)" = false ]'
log "alarm cleared"

wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($during)
    and status = 'completed'\")\" = 10 ]"
# Heartbeats sent after the alarm are recorded again.
wait_until 15 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'
    and last_heartbeat > '$alarm_at'::timestamptz + interval '20 seconds'\")\" = 1 ]"
kill "$LIVEZ" 2>/dev/null || true
assert_eq 0 "$(psql_q "select count(*) from executions where id in ($before,$during)
    and status <> 'completed'")" "executions not completed"
assert_eq online "$(psql_q "select status from workers where id = '$w'")" "worker after the alarm"
n=$(wc -l <"$TEST_TMP/livez.ms")
worst=$(sort -n "$TEST_TMP/livez.ms" | tail -n 1)
log "$n /livez answers, the slowest $worst ms"
[ "$n" -ge 100 ] || fail "only $n /livez answers in the test"
[ "$worst" -le 100 ] || fail "a /livez answer took $worst ms (> 100 ms): $(sort -n "$TEST_TMP/livez.ms" | tail -n 5 | paste -sd' ')"
exec_stop "$EXEC_PID" ex
pass
