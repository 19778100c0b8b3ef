#!/usr/bin/env bash
# A dispatch nobody consumes expires from the worker queue and lands in the dead-letter queue with
# its x-death trail (the fanout DLX keeps the original routing key from mattering); classic and quorum.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
require_stack

export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=500

# expect_dead_letter QUEUE_TYPE: declare, publish one dispatch, find it in the DLQ.
expect_dead_letter() {
    local type=$1 w wq key body msg
    isolate_topology
    new_worker w "$type"
    wq="worker.$w.executions"
    key="execution.dispatch.worker.$w"
    WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUE_TYPE=$type run_warren "declare-$type" topology declare --worker "$w"
    assert_eq 0 "$RUN_RC" "declare $type ($RUN_ERR)"

    body="{\"execution_id\":$RANDOM,\"worker_id\":\"$w\"}"
    amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -e "$TOPO_EXCHANGE" -r "$key" \
        -C application/json -p -b "$body"
    # shellcheck disable=SC2016 # the text is evaluated later, by wait_until
    wait_until 15 '[ "$(queue_messages "'"$TOPO_DLQ"'")" = 1 ]'
    assert_eq 0 "$(queue_messages "$wq")" "$type worker queue empty after expiry"

    msg=$(mgmt_post "queues/%2F/$(urlencode "$TOPO_DLQ")/get" \
        '{"count":1,"ackmode":"ack_requeue_false","encoding":"auto"}')
    assert_eq "$body" "$(jq -r '.[0].payload' <<<"$msg")" "$type dead letter body"
    assert_eq "$key" "$(jq -r '.[0].routing_key' <<<"$msg")" "$type dead letter keeps its routing key"
    assert_eq "expired $wq 1 $TOPO_EXCHANGE $key" \
        "$(jq -r '.[0].properties.headers["x-death"][0] | "\(.reason) \(.queue) \(.count) \(.exchange) \(.["routing-keys"][0])"' <<<"$msg")" \
        "$type x-death entry"
    assert_eq 1 "$(jq -r '.[0].properties.headers["x-death"] | length' <<<"$msg")" "$type one death"
    assert_eq expired "$(jq -r '.[0].properties.headers["x-first-death-reason"]' <<<"$msg")"
}

expect_dead_letter classic
expect_dead_letter quorum
pass
