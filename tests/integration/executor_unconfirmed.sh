#!/usr/bin/env bash
# Dispatches committed but never published (the executor killed right after its COMMIT) are not
# failed without having run: their rows stay scheduled with no confirmed dispatch, the monitor of
# a second executor returns them to requested after executor.unconfirmed_timeout_ms, and they go
# out again (attempt 2) and complete on a real worker. Confirmed dispatches are recorded.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

new_worker w unconf
on_exit "psql_q \"update executions set status = 'cancelled' where pinned_worker = '$w'
    and status in ('requested', 'scheduled', 'running', 'canceling')\" >/dev/null 2>&1"
start_worker worker "$w"
exec_env
"$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"

# The first executor kills itself (SIGKILL) right after the COMMIT that scheduled them.
ids=$(psql_q "insert into executions (action_ref, pinned_worker)
              select 'core.noop', '$w' from generate_series(1, 3) returning id" | paste -sd,)
WARREN_FAULT=exit_after_commit bg_start ex1 "$WARREN_BIN" executor
rc=0
wait "$BG_PID" || rc=$?
assert_eq 137 "$rc" "the first executor died by SIGKILL"
assert_eq "3|3|0" "$(psql_q "select count(*) filter (where status = 'scheduled' and attempt = 1),
    count(*) filter (where dispatch_confirmed_at is null), 0 from executions where id in ($ids)")" \
    "scheduled, never confirmed"
assert_eq 0 "$(queue_messages "worker.$w.executions")" "nothing was published"

# A second executor: they go out again and complete; the scheduled timeout (600 s) plays no part.
export WARREN__EXECUTOR__UNCONFIRMED_TIMEOUT_MS=2000
bg_start ex2 "$WARREN_BIN" executor
ex2=$BG_PID
wait_until 20 "[ \"\$(psql_q \"select count(*) from executions where id in ($ids) and status = 'completed'\")\" = 3 ]"
# (the confirm is recorded only on a row still scheduled half a second later: the worker's
# report has usually moved it on by then)
assert_eq "3" "$(psql_q "select count(*) from executions where id in ($ids) and attempt = 2")" \
    "dispatched again as attempt 2"
history=$(psql_q "select string_agg(to_status, ',' order by seq) from execution_history
                  where execution_id = (select min(id) from executions where id in ($ids))")
# (core.noop may finish before its running status goes out)
[[ "$history" =~ ^requested,scheduled,requested,scheduled,(running,)?completed$ ]] ||
    fail "history: $history"
assert_eq 0 "$(psql_q "select count(*) from dead_letters where execution_id in ($ids)")" \
    "no dead letters: nothing failed, nothing ran twice"
exec_stop "$ex2" ex2
assert_eq 3 "$(stat_of "$EXEC_STATS" monitor_redispatched)" "counted"
pass
