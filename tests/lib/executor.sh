# Helpers for tests of `warren executor`; source after common.sh and topology.sh.
# shellcheck shell=bash

# exec_env: fast settings for tests (each can still be overridden before calling exec_start).
exec_env() {
    export WARREN__EXECUTOR__POLL_INTERVAL_MS=${WARREN__EXECUTOR__POLL_INTERVAL_MS:-50}
    export WARREN__EXECUTOR__MONITOR_INTERVAL_S=${WARREN__EXECUTOR__MONITOR_INTERVAL_S:-1}
    export WARREN__EXECUTOR__DLQ_RETRY_DELAY_MS=${WARREN__EXECUTOR__DLQ_RETRY_DELAY_MS:-500}
    export WARREN__LOG__LEVEL=${WARREN__LOG__LEVEL:-debug}
}

# exec_start NAME: migrate, then run an executor in the background (log in $TEST_TMP/NAME.log)
# and wait until it consumes. Sets EXEC_PID.
# shellcheck disable=SC2034 # a result for the test that called it
exec_start() {
    exec_env
    "$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"
    bg_start "$1" "$WARREN_BIN" executor
    EXEC_PID=$BG_PID
    wait_log "$1" '"executor started"' 20
}

# exec_stop PID NAME: SIGTERM, expect exit 0; sets EXEC_STATS to its final stats line
# (not in $(...): only the test's own shell can wait for its background processes).
# shellcheck disable=SC2034 # a result for the test that called it
exec_stop() {
    local rc=0
    bg_stop "$1" 15 || rc=$?
    assert_eq 0 "$rc" "executor $2 exit status after SIGTERM"
    EXEC_STATS=$(grep '"msg":"stats"' "$(bg_log "$2")" | tail -n 1)
}

# stat_of STATS_LINE FIELD: one counter of a stats log line.
stat_of() { jq -r --arg f "$2" '.[$f]' <<<"$1"; }

# envelope TYPE PAYLOAD_JSON [ATTEMPT]: a message envelope as workers send it.
envelope() {
    jq -cn --arg t "$1" --argjson p "$2" --argjson a "${3:-0}" \
        --arg id "$(cat /proc/sys/kernel/random/uuid)" \
        '{message_id: $id, correlation_id: null, message_type: $t, version: 1,
          timestamp: (now | strftime("%Y-%m-%dT%H:%M:%SZ")),
          headers: {source: "test", attempt: $a, trace_id: null}, payload: $p}'
}

# publish EXCHANGE KEY BODY: one persistent JSON message.
publish() {
    amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -e "$1" -r "$2" -p \
        -C application/json -b "$3"
}

# heartbeat WORKER CAPABILITIES_CSV CAPACITY INTERVAL_S [STATUS]: a fake worker announces itself.
# HEARTBEAT_EXTRA (a JSON object, e.g. {"incarnation": "..."}) is merged into the payload.
heartbeat() {
    local caps
    caps=$(jq -cn --arg c "$2" '$c | split(",")')
    publish "$TOPO_EXCHANGE" "worker.heartbeat.$1" "$(envelope WorkerHeartbeat "$(jq -cn \
        --arg w "$1" --argjson caps "$caps" --argjson cap "$3" --argjson iv "$4" --arg st "${5:-online}" \
        --argjson x "${HEARTBEAT_EXTRA:-{\}}" \
        '{worker_id: $w, status: $st, capabilities: $caps, capacity: $cap, running: 0,
          heartbeat_interval_s: $iv, host: "test-host", version: "test",
          started_at: (now | strftime("%Y-%m-%dT%H:%M:%SZ"))} + $x')")"
}

# fake_worker VAR PREFIX: like new_worker, and its queue declared (TTL, dead-letter exchange) so
# dispatches to it wait there; the test plays the worker with heartbeat and report.
fake_worker() {
    new_worker "$1" "$2"
    run_warren "declare-${!1}" topology declare --worker "${!1}"
    assert_eq 0 "$RUN_RC" "declare the queue of ${!1} ($RUN_ERR)"
}

# heartbeat_seen WORKER ACTION [CAPACITY] [INTERVAL_S]: one heartbeat (capacity 10, interval 60 s
# unless given), then wait until the executor has the worker's row.
heartbeat_seen() {
    heartbeat "$1" "$2" "${3:-10}" "${4:-60}"
    wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$1'\")\" = 1 ]"
}

# report WORKER EXECUTION_ID ATTEMPT STATUS [RESULT_JSON] [ERROR]: a fake worker's status change
# (running) or completion (completed, failed, timeout). REPORT_EXTRA (a JSON object, e.g.
# {"incarnation": "...", "timeout_s": 5}) is merged into the payload.
report() {
    local type=ExecutionCompleted key="execution.completed.$1"
    if [ "$4" = running ]; then type=ExecutionStatusChanged key="execution.status.$1"; fi
    publish "$TOPO_EXCHANGE" "$key" "$(envelope "$type" "$(jq -cn --arg w "$1" --argjson id "$2" \
        --argjson a "$3" --arg st "$4" --argjson r "${5:-null}" --arg e "${6:-}" \
        --argjson x "${REPORT_EXTRA:-{\}}" \
        '{execution_id: $id, worker_id: $w, attempt: $a, status: $st, result: $r}
         + (if $e == "" then {} else {error: $e} end) + $x')" "$3")"
}

# new_execution ACTION [PINNED_WORKER] [PARAMS_JSON]: insert a requested execution, print its id.
new_execution() {
    local pinned=NULL params=${3:-'{}'}
    [ -n "${2:-}" ] && pinned="'$2'"
    psql_q "insert into executions (action_ref, pinned_worker, params)
            values ('$1', $pinned, '$params') returning id"
}

# exec_field ID COLUMN: one column of an execution row (text).
exec_field() { psql_q "select $2 from executions where id = $1"; }

# forget_executions ACTION_PREFIX: at exit, cancel this test's unfinished executions so later
# tests' schedulers do not keep claiming them.
forget_executions() {
    on_exit "psql_q \"update executions set status = 'cancelled' where action_ref like '$1%'
        and status in ('requested', 'scheduled', 'running', 'canceling')\" >/dev/null 2>&1"
}

# (queue_messages from common.sh counts ready and unacknowledged messages alike, so 0 means
# everything was acked.)

# queue_get QUEUE COUNT: up to COUNT messages from QUEUE (requeued), as the management API shows them.
queue_get() {
    mgmt_post "queues/%2F/$(urlencode "$1")/get" \
        "{\"count\":$2,\"ackmode\":\"ack_requeue_true\",\"encoding\":\"auto\"}"
}

# start_live_worker VAR PREFIX: a worker with a new id in VAR (new_worker), running as the
# background process "worker" (BG_PID) and live in the executor's workers table. Whatever is
# pinned to it and unfinished when the test ends is cancelled, so later tests' schedulers do not
# keep claiming it. Call it from the test's own shell, not in $(...).
start_live_worker() {
    new_worker "$1" "$2"
    local id=${!1}
    on_exit "psql_q \"update executions set status = 'cancelled' where pinned_worker = '$id'
        and status in ('requested', 'scheduled', 'running', 'canceling')\" >/dev/null 2>&1"
    start_worker worker "$id"
    wait_until 15 "[ \"\$(psql_q \"select status from workers where id = '$id'\")\" = online ]"
}

# events_inbox KEY: a new durable topic exchange (removed at the end) and a new queue bound to
# it with KEY, for the executor's events; sets events (the exchange) and inbox (the queue), and
# exports WARREN__EVENTS__EXCHANGE.
# shellcheck disable=SC2034 # results for the test that called it
events_inbox() {
    events=$(unique_name events)
    inbox=$(unique_name inbox)
    mgmt_put "exchanges/%2F/$(urlencode "$events")" '{"type":"topic","durable":true}' >/dev/null
    on_exit mgmt_delete "exchanges/%2F/$(urlencode "$events")"
    declare_queue "$inbox"
    mgmt_post "bindings/%2F/e/$(urlencode "$events")/q/$(urlencode "$inbox")" \
        "{\"routing_key\":\"$1\"}" >/dev/null
    export WARREN__EVENTS__EXCHANGE=$events
}
