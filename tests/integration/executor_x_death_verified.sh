#!/usr/bin/env bash
# A record's queue and reason from an x-death are a claim until the broker is known to have written
# it (dead_letters.x_death_verified, schema 030): a dispatch that really expired in a worker queue
# is recorded verified; a dispatch with a made-up x-death published straight into the dead-letter
# queue, or into the dead-letter exchange naming a queue that is no worker's, is recorded
# unverified (its queue still the one it claims); `warren dlq list` and the API's record show it.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=1000
exec_start ex

log "a real expiry: verified"
new_worker w gone
"$WARREN_BIN" topology declare --worker "$w" >"$TEST_TMP/declare.out" 2>&1 || fail "declare: $(cat "$TEST_TMP/declare.out")"
on_exit "mgmt_delete 'queues/%2F/worker.$w.executions' >/dev/null 2>&1"
real=$(new_execution core.echo "$w")
wait_until 20 "[ \"\$(exec_field $real status)\" = failed ]"
assert_eq "expired|worker.$w.executions|t" \
    "$(psql_q "select reason, queue, x_death_verified from dead_letters where execution_id = $real")" \
    "the broker's expiry"

# forge ID EXCHANGE ROUTING_KEY QUEUE: a dispatch of execution ID whose x-death says it expired in
# QUEUE, published by the management API (which writes any header) into EXCHANGE.
forge() {
    local body props
    body=$(dispatch_body "$1" "$w" core.echo '{"forged": true}')
    props=$(jq -cn --arg q "$4" --arg ex "$TOPO_EXCHANGE" --arg id "forged-$1" \
        '{type: "ExecutionRequested", message_id: $id, content_type: "application/json",
          headers: {"x-death": [{queue: $q, reason: "expired", count: 1, exchange: $ex,
                                 "routing-keys": ["execution.dispatch.worker.w"]}]}}')
    out=$(mgmt_post "exchanges/%2F/$(urlencode "$2")/publish" "$(jq -cn --argjson p "$props" \
        --arg rk "$3" --arg b "$body" '{properties: $p, routing_key: $rk, payload: $b,
                                        payload_encoding: "string"}')")
    assert_eq true "$(jq -r .routed <<<"$out")" "forged message $1 routed"
}

log "a made-up x-death published straight into the dead-letter queue: unverified"
forged=$(new_execution core.echo "$w")
wait_until 10 "[ \"\$(exec_field $forged status)\" != requested ]"
forge "$forged" amq.default "$TOPO_DLQ" "worker.$w.executions"
wait_until 15 "[ \"\$(psql_q \"select count(*) from dead_letters where message_id = 'forged-$forged'\")\" = 1 ]"
assert_eq "worker.$w.executions|f" \
    "$(psql_q "select queue, x_death_verified from dead_letters where message_id = 'forged-$forged'")" \
    "the forged x-death's queue, marked a claim"

log "through the dead-letter exchange, naming a queue that is no worker's: unverified"
ghost=$((8200000000000 + RANDOM * 32768 + RANDOM))
forge "$ghost" "$TOPO_DLX" "execution.dispatch.worker.$w" "$TOPO_RESULTS"
wait_until 15 "[ \"\$(psql_q \"select count(*) from dead_letters where message_id = 'forged-$ghost'\")\" = 1 ]"
assert_eq "$TOPO_RESULTS|f" \
    "$(psql_q "select queue, x_death_verified from dead_letters where message_id = 'forged-$ghost'")" \
    "a queue no dispatch expires from"

log "shown by the API's record and warren dlq list"
rid=$(psql_q "select id from dead_letters where execution_id = $real")
fid=$(psql_q "select id from dead_letters where message_id = 'forged-$forged'")
assert_eq true "$("$WARREN_BIN" dlq list --execution-id "$real" --json | jq -r '.items[0].x_death_verified')" \
    "the real expiry's record"
assert_eq false "$("$WARREN_BIN" dlq list --execution-id "$forged" --json |
    jq -r --argjson id "$fid" '.items[] | select(.id == $id) | .x_death_verified')" "the forged record"
list=$("$WARREN_BIN" dlq list --execution-id "$real")
assert_contains "$list" "X-DEATH" "the list's column"
assert_eq broker "$(awk -v id="$rid" '$1 == id { print $7 }' <<<"$list")" "the real expiry's row"
list=$("$WARREN_BIN" dlq list --execution-id "$forged")
assert_eq claim "$(awk -v id="$fid" '$1 == id { print $7 }' <<<"$list")" "the forged row"
pass
