#!/usr/bin/env bash
# The happy path's writes (issue 18, schema 029): an execution that completes on its first
# dispatch costs its insert and two row versions of executions (dispatched, ended), no history
# row and no attempt row; every further version is explained by a confirm recorded because the
# report came late (dispatch_confirmed_at) or a running report that went out (reported_at).
# The whole story is still told by execution_history and execution_attempt_history, and by
# GET /api/v1/executions/{id}; a failure writes down the implied steps before its own.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

# A database of our own: its table counters are this test's alone.
private_database lean
export WARREN__LOG__LEVEL=info

isolate_topology
worker_env
api_start ex
start_live_worker w lean

N=40
ids=$(psql_q "insert into executions (action_ref, pinned_worker)
              select 'core.noop', '$w' from generate_series(1, $N) returning id" | paste -sd, -)
wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($ids) and status = 'completed'\")\" = $N ]"

# Row versions: n_tup_upd of executions, once the executor's backend has reported its counts
# (at most every second while busy, else 10 s after its last transaction).
extra=$(psql_q "select count(*) filter (where dispatch_confirmed_at is not null)
                       + count(*) filter (where reported_at is not null)
                from executions where id in ($ids)")
log "versions explained by a late confirm or a running report: $extra of $N executions"
updates() { psql_q "select n_tup_upd from pg_stat_user_tables where relname = 'executions'"; }
wait_until 20 "[ \"\$(updates)\" -ge $((2 * N + extra)) ]"
sleep 2
assert_eq "$((2 * N + extra))" "$(updates)" "row versions after the insert: two each, and the explained ones"
assert_eq "0|0" "$(psql_q "select (select count(*) from execution_events), (select count(*) from execution_attempts)")" \
    "the happy path stores no history and no attempt row"

# The story, implied from the row's timestamps.
first=${ids%%,*}
history=$(psql_q "select string_agg(coalesce(from_status, '-') || '>' || to_status, ' ' order by seq)
                  from execution_history where execution_id = $first")
[[ "$history" =~ ^-\>requested\ requested\>scheduled\ (scheduled\>running\ running|scheduled)\>completed$ ]] ||
    fail "implied history: $history"
assert_eq "$N" "$(psql_q "select count(distinct execution_id) from execution_history
                          where execution_id in ($ids) and to_status = 'completed' and implied and id is null")" \
    "each completion implied once"
assert_eq "1|completed|none|$w" "$(psql_q "select attempt, outcome, decision, worker from execution_attempt_history
                                          where execution_id = $first")" "the implied attempt record"
expect 200 GET "/api/v1/executions/$first"
assert_eq "requested|completed|true|null|completed|null" \
    "$(jq -r '"\(.events[0].to_status)|\(.events[-1].to_status)|\(.events[-1].implied)|\(.events[-1].id)|\(.attempts[0].outcome)|\(.attempts[0].id)"' <<<"$CALL_BODY")" \
    "the API's events and attempts"
out=$("$WARREN_BIN" get "$first")
assert_contains "$out" "completed" "warren get tells the story"

# A failure writes down the steps that led to it (implied), then its own.
failed=$(psql_q "insert into executions (action_ref, pinned_worker, params, retry_max_attempts)
                 values ('core.fail', '$w', '{\"code\": 4}', 1) returning id")
wait_until 20 "[ \"\$(exec_field $failed status)\" = failed ]"
assert_eq "requested:t scheduled:t failed:f" \
    "$(psql_q "select string_agg(to_status || ':' || left(implied::text, 1), ' ' order by id)
               from execution_events where execution_id = $failed and to_status <> 'running'")" \
    "stored: the implied steps, then the failure"
assert_eq "1|failed" "$(psql_q "select count(*), min(outcome) from execution_attempts where execution_id = $failed")" \
    "a failed attempt is stored"
pass
