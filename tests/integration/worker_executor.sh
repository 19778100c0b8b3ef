#!/usr/bin/env bash
# End to end with the real executor: executions inserted as requested are scheduled onto a real
# worker, run, and their rows end completed (result = the params), failed (exit code and stderr
# tail in the outcome) and timeout, each having passed through running; the worker's row follows its
# heartbeats, "offline" once drained after SIGTERM.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

exec_start ex
# core.sleep gets 1 s unless the submission names its own timeout.
export WARREN__WORKER__ACTION_TIMEOUTS="core.noop=5,core.sleep=1"
start_live_worker w e2e
assert_eq "t|16|1" "$(psql_q "select 'core.echo' = any(capabilities), capacity, heartbeat_interval_s
                             from workers where id = '$w'")" "the worker's row"

echo_id=$(new_execution core.echo "$w" '{"greeting": "hello", "n": [1, 2]}')
noop_id=$(new_execution core.noop "$w")
fail_id=$(new_execution core.fail "$w" '{"code": 4}')
slow_id=$(psql_q "insert into executions (action_ref, pinned_worker, params, timeout_s)
                  values ('core.sleep', '$w', '{\"seconds\": 30}', 1) returning id")

by_action=$(new_execution core.sleep "$w" '{"seconds": 30}')
own=$(psql_q "insert into executions (action_ref, pinned_worker, params, timeout_s)
              values ('core.sleep', '$w', '{\"seconds\": 2}', 10) returning id")

# shellcheck disable=SC2317 # called by wait_until
settled() { [ "$(exec_field "$1" status)" = "$2" ]; }
wait_until 20 settled "$echo_id" completed
wait_until 20 settled "$fail_id" failed
wait_until 20 settled "$slow_id" timeout
wait_until 20 settled "$by_action" timeout
wait_until 20 settled "$own" completed
assert_contains "$(exec_field "$by_action" error)" "timed out after 1 s" "worker.action_timeouts applies"

assert_eq '{"n": [1, 2], "greeting": "hello"}' "$(exec_field "$echo_id" result)" "echo result"
assert_eq "$w|1|t|t" "$(exec_field "$echo_id" "worker, attempt, started_at is not null, ended_at >= started_at")" \
    "echo row"
assert_contains "$(exec_field "$fail_id" error)" "handler exited with code 4"
outcome=$(exec_field "$fail_id" outcome)
assert_eq 4 "$(jq -r .exit_code <<<"$outcome")" "exit code in the outcome"
assert_contains "$(jq -r .stderr_tail <<<"$outcome")" "failing on purpose with exit code 4 (execution $fail_id)" \
    "stderr tail in the outcome"
assert_eq 0 "$(exec_field "$echo_id" "(outcome->>'exit_code')::int")" "exit code of the success"
assert_contains "$(exec_field "$slow_id" error)" "timed out after 1 s"
# An in-process handler finishes before its running status goes out: the completion alone
# reports it (scheduled -> completed), with the worker's start time.
wait_until 20 settled "$noop_id" completed
assert_eq "requested scheduled completed|t|{}" \
    "$(psql_q "select string_agg(to_status, ' ' order by seq) from execution_history where execution_id = $noop_id")|$(exec_field "$noop_id" "started_at is not null and started_at <= ended_at")|$(exec_field "$noop_id" result)" \
    "core.noop: completion without a running status"
for id in "$echo_id" "$fail_id" "$slow_id"; do
    assert_eq "requested scheduled running $(exec_field "$id" status)" \
        "$(psql_q "select string_agg(to_status, ' ' order by seq) from execution_history where execution_id = $id")" \
        "history of $id"
done
wait_settled "worker.$w.executions"

stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"completed":"3"'
wait_until 10 "[ \"\$(psql_q \"select status || ' ' || running from workers where id = '$w'\")\" = 'offline 0' ]"
exec_stop "$EXEC_PID" ex
pass
