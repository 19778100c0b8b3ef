#!/usr/bin/env bash
# A repeated dispatch of work the worker already finished is answered with the completion it
# sent, not run again: the database loses the commits of a finished execution (it is requested
# again with the attempt it had), the executor dispatches that attempt again, and the row still
# ends completed, from the first run's completion (marked "repeat"), with the handler run once.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

exec_start ex
start_live_worker w repeat

id=$(psql_q "insert into executions (action_ref, pinned_worker, params)
             values ('core.echo', '$w', '{\"n\": 1}') returning id")
# shellcheck disable=SC2317 # called by wait_until
settled() { [ "$(exec_field "$id" status)" = "$1" ]; }
wait_until 20 settled completed
first=$(exec_field "$id" "attempt || '|' || worker || '|' || result::text")
assert_eq 1 "$(exec_field "$id" attempt)" "first attempt"

# What a crash with asynchronous commit (or a failover to an asynchronous replica) leaves: the
# row as it was before its claim was committed.
psql_q "update executions set status = 'requested', attempt = attempt - 1, worker = null,
        result = null, error = null, outcome = null, scheduled_at = null, started_at = null,
        ended_at = null where id = $id" >/dev/null
wait_until 20 settled completed
wait_log worker '"msg":"dispatch of an execution this worker already finished: not run again, its completion is sent again"' 1
assert_eq "$first" "$(exec_field "$id" "attempt || '|' || worker || '|' || result::text")" \
    "the same attempt, worker and result as the first run"
stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"started":"1"' "the handler ran once"
assert_contains "$WORKER_STATS" '"repeats":"1"'
exec_stop "$EXEC_PID" ex
pass
