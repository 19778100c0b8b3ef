# Helpers for tests of the broker topology; source after common.sh.
# shellcheck shell=bash

# isolate_topology: give this test its own exchanges and queues through WARREN__* overrides, so
# tests never share (or break) each other's topology, and delete them when the test ends.
# Sets TOPO_EXCHANGE, TOPO_DLX, TOPO_DLQ, TOPO_PARKING, TOPO_RESULTS and TOPO_HEARTBEATS.
isolate_topology() {
    local p; p=$(unique_name topo)
    TOPO_EXCHANGE="$p.executions" TOPO_DLX="$p.dlx" TOPO_DLQ="$p.dlx.queue"
    TOPO_PARKING="$p.dlx.parking" TOPO_RESULTS="$p.results" TOPO_HEARTBEATS="$p.heartbeats"
    export WARREN__MESSAGE_QUEUE__RABBITMQ__EXCHANGES__EXECUTIONS=$TOPO_EXCHANGE
    export WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__EXCHANGE=$TOPO_DLX
    export WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__QUEUE=$TOPO_DLQ
    export WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__PARKING_QUEUE=$TOPO_PARKING
    export WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUES__RESULTS=$TOPO_RESULTS
    export WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUES__HEARTBEATS=$TOPO_HEARTBEATS
    local q x
    for q in "$TOPO_DLQ" "$TOPO_PARKING" "$TOPO_RESULTS" "$TOPO_HEARTBEATS"; do
        on_exit "mgmt_delete 'queues/%2F/$q' >/dev/null 2>&1"
    done
    for x in "$TOPO_EXCHANGE" "$TOPO_DLX"; do
        on_exit "mgmt_delete 'exchanges/%2F/$x' >/dev/null 2>&1"
    done
}

# new_worker VAR PREFIX: set VAR to a unique valid worker id whose queue is deleted when the test
# ends (not in $(...): the cleanup must be registered by the test's own shell).
new_worker() {
    local _nw_id # not the caller's VAR, which it must not shadow
    _nw_id=$(unique_name "$2")
    on_exit "mgmt_delete 'queues/%2F/worker.$_nw_id.executions' >/dev/null 2>&1"
    printf -v "$1" '%s' "$_nw_id"
}

# queue_json NAME / exchange_json NAME: the management API's view of one object.
queue_json() { mgmt_get "queues/%2F/$(urlencode "$1")"; }
exchange_json() { mgmt_get "exchanges/%2F/$(urlencode "$1")"; }

# binding_keys EXCHANGE QUEUE: routing keys from EXCHANGE to QUEUE, sorted, comma-separated.
binding_keys() {
    mgmt_get "bindings/%2F/e/$(urlencode "$1")/q/$(urlencode "$2")" | jq -r '[.[].routing_key] | sort | join(",")'
}

# run_warren OUT_PREFIX ARGS...: run the binary, keep stdout/stderr in $TEST_TMP, set RUN_RC.
# shellcheck disable=SC2034 # results for the test that called it
run_warren() {
    local out=$1; shift
    RUN_RC=0
    "$WARREN_BIN" "$@" >"$TEST_TMP/$out.out" 2>"$TEST_TMP/$out.err" || RUN_RC=$?
    RUN_OUT=$(cat "$TEST_TMP/$out.out")
    RUN_ERR=$(cat "$TEST_TMP/$out.err")
}
