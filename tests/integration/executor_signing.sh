#!/usr/bin/env bash
# Signed messages (message_queue.signing_key_file): with keys set, an execution runs as always
# (the executor signs its dispatch, the worker its reports and heartbeats); an unsigned dispatch
# published straight into a worker's queue is refused, never run, and recorded (bad_signature);
# (counted by the worker: warren_worker_bad_signatures_total); an unsigned heartbeat makes no
# worker and an unsigned result changes nothing, both recorded;
# and with two keys at once (a rotation) a worker signing with the new key and an executor
# signing with the old one still understand each other.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

secret() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
OLD=$(secret) NEW=$(secret)
keys() { # FILE LINE...: a key file of these lines, 0600
    local f=$1
    shift
    (umask 077 && printf '%s\n' "# warren signing keys" "$@" >"$f")
}
keys "$TEST_TMP/executor.keys" "k1 $OLD"
keys "$TEST_TMP/worker.keys" "k1 $OLD"
export WARREN__MESSAGE_QUEUE__SIGNING_KEY_FILE=$TEST_TMP/executor.keys
exec_start ex
wait_log ex '"msg":"messages signed and checked".*"key_id":"k1"' 5
WARREN__WORKER__HTTP_LISTEN=127.0.0.1:0 WARREN__MESSAGE_QUEUE__SIGNING_KEY_FILE=$TEST_TMP/worker.keys \
    start_live_worker w sig

log "a signed execution runs as always"
id=$(new_execution core.echo "$w" '{"n": 1}')
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq '{"n": 1}|0' "$(exec_field "$id" "result, (select count(*) from dead_letters where execution_id = $id)")" \
    "completed, nothing refused"
msg=$(queue_get "$TOPO_DLQ" 1) # nothing there; the headers are checked on a live copy below
assert_eq "[]" "$msg" "the dead-letter queue is empty"

log "an unsigned dispatch is refused by the worker, never run, and recorded"
ghost=$((8100000000000 + RANDOM * 32768 + RANDOM))
publish "$TOPO_EXCHANGE" "execution.dispatch.worker.$w" "$(envelope ExecutionRequested "$(jq -cn \
    --argjson id "$ghost" --arg w "$w" \
    '{execution_id: $id, worker_id: $w, action_ref: "core.echo", params: {"forged": true},
      attempt: 1, timeout_s: 30}')" 1)"
wait_until 15 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $ghost\")\" = 1 ]"
assert_eq "bad_signature|worker.$w.executions|rejected|poison_message|pending" \
    "$(psql_q "select reason, queue, headers->'x-death'->0->>'reason', investigation_reason, resolution
               from dead_letters where execution_id = $ghost")" "recorded from the worker's rejection"
assert_contains "$(psql_q "select error from dead_letters where execution_id = $ghost")" "unsigned" "why"
wait_log worker '"msg":"dispatch rejected; dead-lettered".*unsigned' 5
assert_not_contains "$(grep -F "\"execution_id\":\"$ghost\"" "$(bg_log worker)" || true)" '"msg":"execution started"' \
    "the worker never started it"

wait_until 5 "curl -sS http://127.0.0.1:$(http_port worker health)/metrics | grep -qx 'warren_worker_bad_signatures_total 1'"

log "an unsigned heartbeat makes no worker; an unsigned result changes nothing"
ghost_worker=$(unique_name ghost)
heartbeat "$ghost_worker" core.echo 10 60
report "$w" "$id" 1 failed '{"forged": true}' "forged failure"
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where reason = 'bad_signature' and (routing_key = 'worker.heartbeat.$ghost_worker' or execution_id = $id)\")\" = 2 ]"
assert_eq 0 "$(psql_q "select count(*) from workers where id = '$ghost_worker'")" "no ghost worker"
assert_eq 'completed|{"n": 1}' "$(exec_field "$id" "status, result")" "the execution is unchanged"
wait_log ex '"msg":"heartbeat refused: its signature does not verify"' 5
wait_log ex '"msg":"report refused: its signature does not verify"' 5

log "rotation: two keys at once"
bg_stop worker 15 || true
keys "$TEST_TMP/executor.keys" "k1 $OLD" "k2 $NEW"
keys "$TEST_TMP/worker.keys" "k2 $NEW" "k1 $OLD"
exec_stop "$EXEC_PID" ex
exec_start ex2
WARREN__MESSAGE_QUEUE__SIGNING_KEY_FILE=$TEST_TMP/worker.keys start_worker worker2 "$w"
wait_log worker2 '"msg":"messages signed and checked".*"key_id":"k2"' 5
id2=$(new_execution core.echo "$w" '{"n": 2}')
wait_until 20 "[ \"\$(exec_field $id2 status)\" = completed ]"
assert_eq 0 "$(psql_q "select count(*) from dead_letters where execution_id = $id2")" \
    "a dispatch signed with k1 and reports signed with k2 all verify"
pass
