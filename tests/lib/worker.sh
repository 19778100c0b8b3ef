# Helpers for tests of `warren worker`; source after common.sh and topology.sh. The test plays the
# executor: it publishes dispatches and reads what the worker reports from the (isolated) results
# and heartbeat queues.
# shellcheck shell=bash

# worker_env: settings for every worker test: the source tree's handlers, fast heartbeats, JSON
# logs, a short circuit-breaker pause, and a topology of the test's own (isolate_topology).
worker_env() {
    isolate_topology
    export WARREN__WORKER__HANDLERS_DIR="$WARREN_SOURCE_DIR/handlers"
    export WARREN__WORKER__HEARTBEAT_INTERVAL_S=1
    export WARREN__WORKER__KILL_GRACE_S=1
    export WARREN__LOG__FORMAT=json
    export WARREN__CIRCUIT_BREAKER__MESSAGING__OPEN_TIMEOUT_S=2
    export WARREN__MESSAGE_QUEUE__RABBITMQ__PUBLISH_TIMEOUT_MS=2000
}

# test_handlers_dir: worker.handlers_dir with the source tree's core.* handlers and the test
# module test.wait (tests/handlers/test_wait.c, in-process, ABI version 2).
test_handlers_dir() {
    local dir="$TEST_TMP/handlers"
    mkdir -p "$dir"
    ln -sf "$WARREN_SOURCE_DIR"/handlers/core.* "$dir/"
    ln -sf "$WARREN_BUILD_DIR/tests/handlers/test_wait.so" "$dir/"
    export WARREN__WORKER__HANDLERS_DIR=$dir
}

# pgroup_alive PGID: true while a process of the group still runs. A zombie does not count: a
# handler's child killed with it is reparented to PID 1 (its shell died too), and when PID 1
# reaps it is up to PID 1, not to the worker.
pgroup_alive() {
    ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { alive = 1 } END { exit !alive }'
}

# start_worker NAME ID [ARGS...]: `warren worker --name ID` in the background (bg_start NAME),
# waiting until it consumes its queue; BG_PID is its pid.
start_worker() {
    local name=$1 id=$2
    shift 2
    bg_start "$name" "$WARREN_BIN" worker --name "$id" "$@"
    wait_log "$name" '"msg":"consuming dispatches"' 20
}

# dispatch_body ID WORKER ACTION PARAMS_JSON [ATTEMPT] [TIMEOUT_S]: an ExecutionRequested envelope.
# The params text is spliced in as written (jq would round its numbers).
dispatch_body() {
    local body
    body=$(jq -cn --argjson id "$1" --arg w "$2" --arg a "$3" \
        --argjson attempt "${5:-1}" --argjson t "${6:-0}" \
        '{message_id: "dispatch-\($id)-\($attempt)", correlation_id: ($id | tostring),
          message_type: "ExecutionRequested", version: 1,
          timestamp: (now | strftime("%Y-%m-%dT%H:%M:%SZ")),
          headers: {source: "test", attempt: $attempt, trace_id: "trace-\($id)"},
          payload: {execution_id: $id, worker_id: $w, action_ref: $a, params: "@PARAMS@",
                    attempt: $attempt, timeout_s: $t}}')
    printf '%s' "${body/'"@PARAMS@"'/"$4"}"
}

# publish_dispatch WORKER BODY: to the executions exchange with the worker's dispatch key.
publish_dispatch() {
    amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -e "$TOPO_EXCHANGE" \
        -r "execution.dispatch.worker.$1" -C application/json -p -b "$2"
}

# collect QUEUE: snapshot the messages now in QUEUE (they stay there: a lost HTTP answer then
# loses nothing) into $TEST_TMP/QUEUE.msgs, one JSON object a line, oldest first:
# {routing_key, properties, raw, body, encoding}: raw is the body text as sent, body the same
# parsed (jq rounds numbers it parses: compare exact bytes on raw); encoding is "string", or
# "base64" (raw is then base64) when the body is not valid UTF-8.
collect() {
    local f="$TEST_TMP/$1.msgs" got
    got=$(mgmt_post "queues/%2F/$(urlencode "$1")/get" \
        '{"count":5000,"ackmode":"ack_requeue_true","encoding":"auto"}') || return 1
    jq -c '.[] | .payload as $p | {routing_key, properties, raw: $p, body: (try ($p | fromjson) catch $p),
                                   encoding: .payload_encoding}' \
        <<<"$got" >"$f.new"
    mv "$f.new" "$f"
}

# msgs QUEUE JQ_CONDITION: the messages of the last snapshot of QUEUE that match, as one array.
msgs() {
    touch "$TEST_TMP/$1.msgs"
    jq -c -s "map(select($2))" "$TEST_TMP/$1.msgs"
}

_msg_seen() {
    collect "$1"
    [ "$(msgs "$1" "$2" | jq length)" -gt 0 ]
}

# wait_msg QUEUE JQ_CONDITION [TIMEOUT_S]: wait for a matching message; print the first one.
wait_msg() {
    try_until "${3:-20}" _msg_seen "$1" "$2" || fail "no message in $1 matching: $2"
    msgs "$1" "$2" | jq -c '.[0]'
}

# Conditions on collected messages of one execution.
is_status() { printf '.body.message_type == "ExecutionStatusChanged" and .body.payload.execution_id == %s' "$1"; }
is_completion() { printf '.body.message_type == "ExecutionCompleted" and .body.payload.execution_id == %s' "$1"; }
is_heartbeat() { printf '.body.message_type == "WorkerHeartbeat" and .body.payload.worker_id == "%s"' "$1"; }

# queue_unacked NAME: deliveries of NAME handed out and not yet acked (exact).
queue_unacked() {
    rmq list_queues -s name messages_unacknowledged |
        awk -v q="$1" '$1 == q { print $2; found = 1 } END { exit !found }'
}

# exec_id: a fresh execution id, unique enough across runs of one stack.
exec_id() { printf '%d' "$(($(date +%s%N) / 1000 % 1000000000000 + 1000000000000))"; }

# wait_settled QUEUE: wait until QUEUE holds nothing, ready or unacked: every dispatch was acked
# (or rejected).
wait_settled() {
    # shellcheck disable=SC2016 # the text is evaluated later, by wait_until
    wait_until 10 '[ "$(queue_messages "'"$1"'")" = 0 ] && [ "$(queue_unacked "'"$1"'")" = 0 ]'
}

# stop_worker NAME PID: SIGTERM, expect exit 0; WORKER_STATS gets its final stats line.
# shellcheck disable=SC2034 # a result for the test that called it
stop_worker() {
    local rc=0
    bg_stop "$2" 15 || rc=$?
    assert_eq 0 "$rc" "$1 exits 0 after SIGTERM"
    WORKER_STATS=$(worker_stats "$1")
}

# worker_stats NAME: the final stats line of a worker that has exited.
worker_stats() { grep '"msg":"worker stopped"' "$(bg_log "$1")"; }

# cancel_body ID WORKER [ATTEMPT]: an ExecutionCancelRequested envelope, as the executor sends it.
cancel_body() {
    jq -cn --argjson id "$1" --arg w "$2" --argjson attempt "${3:-1}" \
        '{message_id: "cancel-\($id)-\($attempt)-\(now)", correlation_id: ($id | tostring),
          message_type: "ExecutionCancelRequested", version: 1,
          timestamp: (now | strftime("%Y-%m-%dT%H:%M:%SZ")),
          headers: {source: "test", attempt: $attempt, trace_id: null},
          payload: {execution_id: $id, attempt: $attempt, worker_id: $w, requested_by: "test"}}'
}

# publish_cancel WORKER BODY: to the executions exchange with the worker's cancel key (through the
# management API, which answers whether the broker routed it); prints true or false.
publish_cancel() {
    mgmt_post "exchanges/%2F/$(urlencode "$TOPO_EXCHANGE")/publish" "$(jq -cn \
        --arg k "execution.cancel.worker.$1" --arg b "$2" \
        '{properties: {content_type: "application/json", delivery_mode: 2,
                       type: "ExecutionCancelRequested"},
          routing_key: $k, payload: $b, payload_encoding: "string"}')" | jq -r .routed
}

# queue_counts NAME: "READY UNACKED CONSUMERS" of NAME, exact, from one rabbitmqctl call.
queue_counts() {
    rmq list_queues -s name messages_ready messages_unacknowledged consumers |
        awk -v q="$1" '$1 == q { print $2, $3, $4; found = 1 } END { exit !found }'
}
