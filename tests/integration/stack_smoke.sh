#!/usr/bin/env bash
# The private stack is real: PostgreSQL answers, the broker is our node, a message makes the round trip.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

assert_eq "warren|1" "$(psql_q "select current_database(), 1")" "query on the private database"

overview=$(mgmt_get overview)
assert_eq "$WARREN_RABBIT_NODE" "$(jq -r .node <<<"$overview")" "node behind the management API"
assert_contains "$(mgmt_get nodes | jq -r '.[].name')" "$WARREN_RABBIT_NODE" "node list"

metrics=$(curl -sS -f --max-time 10 "$WARREN_PROM_URL/metrics")
assert_contains "$metrics" "rabbitmq_identity_info{rabbitmq_node=\"$WARREN_RABBIT_NODE\"" "prometheus metrics"

queue=$(unique_name smoke)
declare_queue "$queue"
assert_eq "0" "$(queue_messages "$queue")" "fresh queue is empty"

body="smoke-$RANDOM-$$"
amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -r "$queue" -p -b "$body"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(queue_messages "'"$queue"'")" = 1 ]'
assert_eq "$body" "$(amqp-get --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -q "$queue")" "message read back"
assert_eq "0" "$(queue_messages "$queue")" "queue drained by amqp-get"

pass
