#!/usr/bin/env bash
# Cancel of running executions end to end, with a real worker: through the API a running
# core.sleep becomes canceling, the worker is told on its control queue, kills the handler's
# process group (gone within 2 s) and reports cancelled; a running in-process handler (ABI
# version 2, tests/handlers/test_wait.c) sees its cancel flag, returns, and ends cancelled too.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

worker_env
test_handlers_dir
api_start ex
new_worker w rw
start_worker wk "$w"
WORKER_PID=$BG_PID
forget_executions core.sleep
forget_executions test.wait

expect 201 POST /api/v1/executions "{\"action_ref\":\"core.sleep\",\"params\":{\"seconds\":60},\"worker\":\"$w\"}"
id=$(jq -r .id <<<"$CALL_BODY")
wait_until 20 "[ \"\$(exec_field $id status)\" = running ]"
handler=$(pgrep -P "$WORKER_PID" -f core.sleep | head -1)
[ -n "$handler" ] || fail "no core.sleep process under the worker"
pgid=$(ps -o pgid= -p "$handler" | tr -d ' ')
pgroup_alive "$pgid" || fail "the handler's process group $pgid is empty"

expect 202 POST "/api/v1/executions/$id/cancel"
t0=$(date +%s%N)
wait_until 2 "! pgroup_alive $pgid"
log "process group gone after $((($(date +%s%N) - t0) / 1000000)) ms"
wait_until 10 "[ \"\$(exec_field $id status)\" = cancelled ]"
assert_eq "cancelled|ops" "$(exec_field "$id" "status, cancelled_by")" "row"
assert_eq "running>canceling,canceling>cancelled" \
    "$(psql_q "select string_agg(from_status || '>' || to_status, ',' order by seq)
               from execution_history where execution_id = $id and from_status in ('running', 'canceling')")" \
    "history"

log "a running in-process handler: its cancel flag ends it"
expect 201 POST /api/v1/executions "{\"action_ref\":\"test.wait\",\"params\":{\"seconds\":60},\"worker\":\"$w\"}"
id=$(jq -r .id <<<"$CALL_BODY")
wait_until 20 "[ \"\$(exec_field $id status)\" = running ]"
expect 202 POST "/api/v1/executions/$id/cancel"
wait_until 10 "[ \"\$(exec_field $id status)\" = cancelled ]"
assert_eq "cancelled|ops|Cancelled by request" "$(exec_field "$id" "status, cancelled_by, error")" "row"
assert_eq t "$(exec_field "$id" "ended_at - started_at < interval '10 s'")" "it stopped at once"
pass
