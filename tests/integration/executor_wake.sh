#!/usr/bin/env bash
# Work is claimed when it arrives and when a slot frees, not at the scheduler's poll. With the
# poll at 60 s: a submission completes within seconds (its insert's notification wakes the
# scheduler); six unpinned ones inserted by one statement, of an action that only a worker with
# one slot offers, all complete, one after another (the claim takes one, each applied result
# claims the next); after PostgreSQL restarts the listener is back and so is the wake. With
# executor.listen_notify off, the same submission waits for the poll.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
on_exit "stack pg-start >/dev/null 2>&1"
export WARREN__EXECUTOR__POLL_INTERVAL_MS=60000
export WARREN__WORKER__MAX_CONCURRENCY=1
export WARREN__LOG__FORMAT=json
# An action no other worker offers (the stack's database holds other tests' worker rows).
action=wake$RANDOM.echo
mkdir -p "$TEST_TMP/handlers"
ln -s "$WARREN_SOURCE_DIR/handlers/core.echo" "$TEST_TMP/handlers/$action"
export WARREN__WORKER__HANDLERS_DIR=$TEST_TMP/handlers

exec_start ex
start_live_worker w wake
wait_log ex '"listening for new work"' 15
# The executor's start-up tick and the first LISTEN's tick are behind us: from here on only a
# wake claims anything before the poll, 60 s away.

completes_within() { # ID SECONDS
    wait_until "$2" "[ \"\$(exec_field $1 status)\" = completed ]"
}

id=$("$WARREN_BIN" submit core.noop --worker "$w")
completes_within "$id" 10
log "a submission completed $(psql_q "select round(extract(epoch from ended_at - created_at) * 1000)
    from executions where id = $id") ms after it was inserted"

ids=$(psql_q "with s as (insert into executions (action_ref, params)
    select '$action', '{}' from generate_series(1, 6) returning id)
    select string_agg(id::text, ',') from s")
on_exit "psql_q \"update executions set status = 'cancelled' where id in ($ids)
    and status in ('requested', 'scheduled', 'running')\" >/dev/null 2>&1"
wait_until 20 "[ \"\$(psql_q \"select count(*) from executions where id in ($ids) and status = 'completed'\")\" = 6 ]"
# One slot: each was dispatched after the one before it had completed.
assert_eq 0 "$(psql_q "select count(*) from executions a join executions b
    on a.id in ($ids) and b.id in ($ids) and a.id <> b.id
    and b.scheduled_at > a.scheduled_at and b.scheduled_at < a.ended_at")" \
    "a dispatch while the one slot was busy"
log "six on one slot: $(psql_q "select round(extract(epoch from max(ended_at) - min(created_at)) * 1000)
    from executions where id in ($ids)") ms"

# PostgreSQL restarts: the listening connection is lost and made again, and wakes work again.
listens=$(grep -c '"listening for new work"' "$(bg_log ex)")
stack pg-stop fast
stack pg-start
wait_until 30 "[ \$(grep -c '\"listening for new work\"' '$(bg_log ex)') -gt $listens ]"
grep -q '"lost the connection that listens for new work' "$(bg_log ex)" ||
    fail "the loss of the listening connection was not logged"
id=$("$WARREN_BIN" submit core.noop --worker "$w")
completes_within "$id" 10

exec_stop "$EXEC_PID" ex

# Off: nothing listens, the submission waits for the poll.
export WARREN__EXECUTOR__LISTEN_NOTIFY=false
exec_start ex2
sleep 2 # the start-up tick is behind us (a fixed wait: it proves a negative below)
id=$("$WARREN_BIN" submit core.noop --worker "$w")
sleep 3
assert_eq requested "$(exec_field "$id" status)" "without listen_notify the submission waits for the poll"
grep -q '"listening for new work"' "$(bg_log ex2)" && fail "listen_notify off, yet it listens"
exec_stop "$EXEC_PID" ex2
pass
