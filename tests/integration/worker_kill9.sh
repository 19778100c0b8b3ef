#!/usr/bin/env bash
# A worker killed with SIGKILL leaves nothing stranded: the dispatch it held but had not started
# goes back to its queue and expires (a requeued message keeps its original expiry), and a
# dispatch sent after its death expires after the queue's TTL; both land in the DLQ with x-death
# reason expired, for the executor to record.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=1000
export WARREN__WORKER__MAX_CONCURRENCY=1

new_worker w kill9
wq="worker.$w.executions"
start_worker worker "$w"
pid=$BG_PID
id=$(exec_id)

# The first dispatch runs; the second is delivered (the first was acked once running) but held:
# one execution at a time.
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.sleep '{"seconds": 2}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$id")" >/dev/null
publish_dispatch "$w" "$(dispatch_body "$((id + 1))" "$w" core.noop '{}')"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(queue_unacked "'"$wq"'")" = 1 ]'

kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(rmq list_queues -s name consumers | awk -v q="'"$wq"'" "\$1 == q { print \$2 }")" = 0 ]'
publish_dispatch "$w" "$(dispatch_body "$((id + 2))" "$w" core.noop '{}')"

# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(queue_messages "'"$TOPO_DLQ"'")" = 2 ]'
assert_eq 0 "$(queue_messages "$wq")" "worker queue empty"
collect "$TOPO_DLQ"
dead=$(msgs "$TOPO_DLQ" true)
assert_eq "[$((id + 1)),$((id + 2))]" "$(jq -c '[.[].body.payload.execution_id] | sort' <<<"$dead")" \
    "the held dispatch and the late one are dead-lettered"
assert_eq '["expired"]' "$(jq -c '[.[].properties.headers["x-death"][0].reason] | unique' <<<"$dead")" "x-death reason"
assert_eq "[\"$wq\"]" "$(jq -c '[.[].properties.headers["x-death"][0].queue] | unique' <<<"$dead")" "x-death queue"
collect "$TOPO_RESULTS"
assert_eq 0 "$(msgs "$TOPO_RESULTS" "$(is_status "$((id + 1))")" | jq length)" "the held dispatch never ran"
pass
