#!/usr/bin/env bash
# Cancel requests on the worker's control queue, the test playing the executor: the queue is the
# worker process's own (exclusive, auto-delete, bound with execution.cancel.worker.{id}); a
# running core.sleep is cancelled with its whole process group gone within 2 s; a running
# in-process handler (ABI version 2, tests/handlers/test_wait.c) is cancelled; a held dispatch is
# reported cancelled without starting; cancels for unknown, finished or other attempts are
# ignored and acked; a bad control message is dead-lettered; cancels racing completions give one
# consistent completion; after a restart the queue is declared again, and after it is deleted
# under the worker too. A repeated dispatch of finished work (cancelled, or held as a repeat and
# cancelled) is answered with the completion it ended with.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

test_handlers_dir
# One at a time, so a second dispatch is held while the first runs.
export WARREN__WORKER__MAX_CONCURRENCY=1

new_worker w cancel
wq="worker.$w.executions"
cq="worker.$w.control"

# start_control_worker NAME: start the worker (bg_start NAME), wait until it consumes both queues.
start_control_worker() {
    start_worker "$1" "$w"
    wait_log "$1" '"msg":"consuming control messages"' 20
    # shellcheck disable=SC2016 # the text is evaluated later, by wait_until
    wait_until 20 '[ "$(queue_counts "'"$cq"'")" = "0 0 1" ]'
}

# cancel ID [ATTEMPT]: publish a cancel request; it must reach the control queue.
cancel() {
    assert_eq true "$(publish_cancel "$w" "$(cancel_body "$1" "$w" "${2:-1}")")" "cancel $1 routed"
}

completion_of() { wait_msg "$TOPO_RESULTS" "$(is_completion "$1")" "${2:-20}" | jq -c .body.payload; }

# control_settled: every control message was acked (or dead-lettered).
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
control_settled() { wait_until 20 '[ "$(queue_counts "'"$cq"'")" = "0 0 1" ]'; }

start_control_worker worker

# 1. The control queue belongs to the worker's connection and routes cancel requests to it.
q=$(queue_json "$cq")
assert_eq "false true true $TOPO_DLX" \
    "$(jq -r '"\(.durable) \(.exclusive) \(.auto_delete) \(.arguments["x-dead-letter-exchange"])"' <<<"$q")" \
    "control queue: durable exclusive auto_delete dlx"
assert_eq "execution.cancel.worker.$w" "$(binding_keys "$TOPO_EXCHANGE" "$cq")" "control binding"

# 2. A running executable handler: its process group is gone within 2 s of the cancel.
id=$(exec_id)
secs="41.$RANDOM"
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.sleep "{\"seconds\": $secs}")"
wait_msg "$TOPO_RESULTS" "$(is_status "$id")" >/dev/null
wait_until 5 pgrep -f "sleep $secs"
pgid=$(ps -o pgid= -p "$(pgrep -f "sleep $secs" | head -n 1)" | tr -d ' ')
{ [ -n "$pgid" ] && pgroup_alive "$pgid"; } || fail "no process group for the handler"
cancel "$id"
t0=$(date +%s%N)
wait_until 2 "! pgroup_alive $pgid"
log "process group $pgid gone $((($(date +%s%N) - t0) / 1000000)) ms after the cancel"
p=$(completion_of "$id")
assert_eq "cancelled -1 15 null" "$(jq -r '"\(.status) \(.exit_code) \(.signal) \(.result)"' <<<"$p")" \
    "cancelled payload: $p"
assert_eq "Cancelled by request" "$(jq -r .error <<<"$p")" "cancel error"
assert_eq true "$(jq '.duration_ms < 5000 and (.started_at | type) == "string"' <<<"$p")" "timing: $p"
wait_log worker '"msg":"cancelling execution".*"requested_by":"test"' 5
wait_settled "$wq"

# 3. A running in-process handler: its wait() returns at once.
inp=$((id + 1))
publish_dispatch "$w" "$(dispatch_body "$inp" "$w" test.wait '{"seconds": 30}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$inp")" >/dev/null
cancel "$inp"
p=$(completion_of "$inp")
assert_eq "cancelled 0 Cancelled by request" "$(jq -r '"\(.status) \(.exit_code) \(.error)"' <<<"$p")" \
    "in-process cancelled: $p"
assert_eq "false 1 $inp" "$(jq -r '"\(.result.waited) \(.result.stop) \(.result.execution_id)"' <<<"$p")" \
    "what the handler saw: $p"
assert_eq true "$(jq '.duration_ms < 3000' <<<"$p")" "in-process duration: $p"
wait_settled "$wq"

# 4. A held dispatch (the one slot is busy): reported cancelled, never started, acked.
busy=$((id + 2)) held=$((id + 3)) busy_secs="42.$RANDOM"
publish_dispatch "$w" "$(dispatch_body "$busy" "$w" core.sleep "{\"seconds\": $busy_secs}")"
wait_msg "$TOPO_RESULTS" "$(is_status "$busy")" >/dev/null
publish_dispatch "$w" "$(dispatch_body "$held" "$w" core.echo '{"never": "run"}')"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 20 '[ "$(queue_counts "'"$wq"'")" = "0 1 1" ]'
cancel "$held"
held_p=$(completion_of "$held")
assert_eq "cancelled -1 0 null null 0 Cancelled by request" \
    "$(jq -r '"\(.status) \(.exit_code) \(.signal) \(.result) \(.started_at) \(.duration_ms) \(.error)"' <<<"$held_p")" \
    "held cancelled: $held_p"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 20 '[ "$(queue_counts "'"$wq"'")" = "0 0 1" ]'
collect "$TOPO_RESULTS"
assert_eq 0 "$(msgs "$TOPO_RESULTS" "$(is_status "$held")" | jq length)" "no running status for the held one"
wait_log worker "\"msg\":\"cancelling execution before it starts\".*\"execution_id\":\"$held\"" 5

# 5. Ignored, and acked: another attempt of a running execution, an unknown one, a finished one.
cancel "$busy" 2
wait_log worker "\"msg\":\"cancel of an execution this worker does not hold: ignored\".*\"execution_id\":\"$busy\"" 5
cancel $((id + 100))
wait_log worker "\"msg\":\"cancel of an execution this worker does not hold: ignored\".*\"execution_id\":\"$((id + 100))\"" 5
cancel "$inp"
wait_log worker "\"msg\":\"cancel of an execution this worker already finished: ignored\".*\"execution_id\":\"$inp\"" 5
control_settled
pgrep -f "sleep $busy_secs" >/dev/null || fail "the busy handler was stopped by a cancel for another attempt"
cancel "$busy"
assert_eq cancelled "$(completion_of "$busy" | jq -r .status)" "busy cancelled"
# The cancelled held dispatch sent again (a database that lost its completion): answered with the
# cancelled completion it ended with, not run.
publish_dispatch "$w" "$(dispatch_body "$held" "$w" core.echo '{"never": "run"}')"
assert_eq "$(jq -c '. + {repeat: true}' <<<"$held_p")" \
    "$(wait_msg "$TOPO_RESULTS" "$(is_completion "$held") and .body.payload.repeat == true" | jq -c .body.payload)" \
    "the cancelled completion again"
wait_settled "$wq"

# 6. A control message that is no cancel for this worker is dead-lettered, and the next works.
assert_eq true "$(publish_cancel "$w" "$(cancel_body 5 "other-worker")")" "stray routed"
assert_eq true "$(publish_cancel "$w" 'not json')" "junk routed"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 20 '[ "$(queue_messages "'"$TOPO_DLQ"'")" = 2 ]'
control_settled
wait_log worker '"msg":"control message rejected; dead-lettered".*reached worker' 5

# 7. Cancels racing the handler's own end (or its start): each execution gets exactly one
# completion, and it is consistent (completed with its result, or cancelled).
race=$((id + 10)) cancelled=4
for delay in 0 0.1 0.2 0.3 0.4 0.5; do
    race=$((race + 1))
    publish_dispatch "$w" "$(dispatch_body "$race" "$w" core.sleep '{"seconds": 0.3}')"
    sleep "$delay"
    cancel "$race"
    p=$(completion_of "$race")
    case "$(jq -r .status <<<"$p")" in
    completed) assert_eq '0 0 null {"slept":0.3}' "$(jq -rc '"\(.exit_code) \(.signal) \(.error) \(.result | tojson)"' <<<"$p")" "completed: $p" ;;
    cancelled)
        assert_eq "Cancelled by request" "$(jq -r .error <<<"$p")" "cancelled: $p"
        cancelled=$((cancelled + 1)) ;;
    *) fail "race $delay: unexpected completion $p" ;;
    esac
    log "cancel after ${delay}s: $(jq -r .status <<<"$p")"
    wait_settled "$wq"
done
sleep 1
collect "$TOPO_RESULTS"
for r in $(seq $((id + 11)) "$race"); do
    assert_eq 1 "$(msgs "$TOPO_RESULTS" "$(is_completion "$r")" | jq length)" "one completion for $r"
done
control_settled

# 8. The worker restarts: its control queue goes with it (a cancel is unroutable, so the executor
# learns that no process can hear it), and the new process declares it again.
stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"control_resubscribes":"0"'
assert_contains "$WORKER_STATS" "\"cancelled\":\"$cancelled\""
assert_contains "$WORKER_STATS" '"control_rejected":"2"'
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(mgmt_status "queues/%2F/'"$cq"'")" = 404 ]'
assert_eq false "$(publish_cancel "$w" "$(cancel_body "$id" "$w")")" "cancel for a worker that is gone"
start_control_worker worker2
again=$((id + 20))
publish_dispatch "$w" "$(dispatch_body "$again" "$w" core.sleep '{"seconds": 30}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$again")" >/dev/null
cancel "$again"
assert_eq cancelled "$(completion_of "$again" | jq -r .status)" "cancelled after the restart"

# 9. The control connection closed under the worker (the exclusive queue goes with it, and the
# management API refuses to delete it alone): reconnected, declared and consumed again.
control_conn() {
    mgmt_get consumers | jq -er --arg q "$cq" '.[] | select(.queue.name == $q) | .channel_details.connection_name'
}
wait_until 10 control_conn
mgmt_delete "connections/$(urlencode "$(control_conn)")" >/dev/null
wait_log worker2 "\"msg\":\"consumer lost; subscribing again\".*\"queue\":\"$cq\"" 10
# shellcheck disable=SC2016 # the text is evaluated later, by try_until
try_until 20 '[ "$(grep -c "\"msg\":\"consuming control messages\"" "'"$(bg_log worker2)"'")" -ge 2 ]' ||
    fail "the control queue was not consumed again"
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 20 '[ "$(queue_counts "'"$cq"'")" = "0 0 1" ]'
last=$((id + 21))
publish_dispatch "$w" "$(dispatch_body "$last" "$w" test.wait '{"seconds": 30}')"
wait_msg "$TOPO_RESULTS" "$(is_status "$last")" >/dev/null
cancel "$last"
assert_eq cancelled "$(completion_of "$last" | jq -r .status)" "cancelled after the queue came back"
wait_settled "$wq"
stop_worker worker2 "$BG_PID"
assert_contains "$WORKER_STATS" '"control_resubscribes":"1"'
assert_contains "$WORKER_STATS" '"resubscribes":"0"'

# 10. A repeated dispatch of work that finished here is answered with that work's completion, and
# a cancel never turns it into another outcome: while reports come back unroutable (the results
# queue unbound) the repeat waits, held, and a cancel of it is ignored; once reports flow again
# the completion it ended with goes out again, marked repeat.
export WARREN__WORKER__MAX_CONCURRENCY=2 # the stuck report's dispatch holds one delivery
start_control_worker worker3
fin=$((id + 30)) blocker=$((id + 31))
publish_dispatch "$w" "$(dispatch_body "$fin" "$w" core.echo '{"done": 1}')"
first=$(completion_of "$fin")
wait_settled "$wq"
results_bindings="bindings/%2F/e/$(urlencode "$TOPO_EXCHANGE")/q/$(urlencode "$TOPO_RESULTS")"
bindings=$(mgmt_get "$results_bindings")
for props in $(jq -r '.[].properties_key' <<<"$bindings"); do
    mgmt_delete "$results_bindings/$(urlencode "$props")" >/dev/null
done
publish_dispatch "$w" "$(dispatch_body "$blocker" "$w" core.echo '{}')"
wait_log worker3 '"msg":"report not confirmed; retrying".*"status":"returned"' 10
publish_dispatch "$w" "$(dispatch_body "$fin" "$w" core.echo '{"done": 1}')"
wait_log worker3 "\"msg\":\"dispatch of an execution this worker already finished: not run again.*\"execution_id\":\"$fin\"" 10
cancel "$fin"
wait_log worker3 "\"msg\":\"cancel of an execution this worker already finished: its completion is sent again\".*\"execution_id\":\"$fin\"" 5
control_settled
for key in $(jq -r '.[].routing_key' <<<"$bindings"); do
    mgmt_post "$results_bindings" "$(jq -cn --arg k "$key" '{routing_key: $k}')" >/dev/null
done
assert_eq "$(jq -c '. + {repeat: true}' <<<"$first")" \
    "$(wait_msg "$TOPO_RESULTS" "$(is_completion "$fin") and .body.payload.repeat == true" 30 | jq -c .body.payload)" \
    "the completed completion again, not a cancelled one"
assert_eq completed "$(completion_of "$blocker" | jq -r .status)" "the report that was stuck"
wait_settled "$wq"
stop_worker worker3 "$BG_PID"
assert_contains "$WORKER_STATS" '"repeats":"1"'
assert_contains "$WORKER_STATS" '"cancelled":"0"'
assert_contains "$WORKER_STATS" '"cancels_ignored":"1"'
pass
