#!/usr/bin/env bash
# A dispatch is acked only once its running status is confirmed, and a redelivery of an execution
# already running here is never run twice. The results queue is deleted, so the running status is
# returned unroutable and retried; the consumer's connection is then closed, the broker requeues
# the unacked dispatch and redelivers it when the worker consumes again (after redeclaring the
# topology, which brings the results queue back). The handler runs once; the redelivery is acked.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

# A handler that leaves a mark per run.
handlers="$TEST_TMP/handlers"
mkdir -p "$handlers"
marks="$TEST_TMP/marks" release="$TEST_TMP/release"
cat >"$handlers/test.mark" <<SH
#!/bin/sh
echo "\$WARREN_EXECUTION_ID \$WARREN_ATTEMPT" >>'$marks'
i=0; while [ ! -e '$release' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done # until the redelivery came
echo '{"marked": true}'
SH
chmod +x "$handlers/test.mark"
export WARREN__WORKER__HANDLERS_DIR=$handlers

new_worker w redeliver
wq="worker.$w.executions"
start_worker worker "$w"
mgmt_delete "queues/%2F/$(urlencode "$TOPO_RESULTS")" >/dev/null

id=$(exec_id)
publish_dispatch "$w" "$(dispatch_body "$id" "$w" test.mark '{}' 2)"
wait_log worker '"msg":"report not confirmed; retrying".*"status":"returned"' 10
assert_eq 1 "$(queue_unacked "$wq")" "the dispatch stays unacked while its status is not confirmed"

consumer_conn() {
    mgmt_get consumers | jq -er --arg q "$wq" '.[] | select(.queue.name == $q) | .channel_details.connection_name'
}
wait_until 10 consumer_conn
conn=$(consumer_conn)
mgmt_delete "connections/$(urlencode "$conn")" >/dev/null
wait_log worker '"msg":"consumer lost; subscribing again"' 10
# shellcheck disable=SC2016 # the text is evaluated later, by try_until
try_until 15 '[ "$(grep -c "\"msg\":\"consuming dispatches\"" "'"$(bg_log worker)"'")" -ge 2 ]' ||
    fail "the worker did not consume again"
wait_log worker '"msg":"dispatch of an execution already (here|running here)' 20 && touch "$release"

p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" 20 | jq -c .body.payload)
assert_eq 'completed 2 {"marked":true}' "$(jq -rc '"\(.status) \(.attempt) \(.result | tojson)"' <<<"$p")" "completion"
wait_msg "$TOPO_RESULTS" "$(is_status "$id")" >/dev/null
wait_settled "$wq"
assert_eq "$id 2" "$(cat "$marks")" "the handler ran exactly once"
log=$(cat "$(bg_log worker)")
case "$log" in
*'"msg":"dispatch of an execution already here: acked once it is reported running"'* | \
    *'"msg":"dispatch of an execution already running here: acked, not run again"'*) ;;
*) fail "the redelivery was not recognised" ;;
esac

stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"duplicates":"1"'
assert_contains "$WORKER_STATS" '"started":"1"'
pass
