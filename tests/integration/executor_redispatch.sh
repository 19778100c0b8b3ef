#!/usr/bin/env bash
# Redispatch on worker loss (docs/retries.md, "Redispatch"), with the shipped configuration (a
# retry policy of one attempt): a worker killed with SIGKILL while its queue holds 10 unpinned
# dispatches that it never started: they expire (x-death expired), and since no worker started
# them they are dispatched again at once, not as a retry (retries 0, redispatches 1, decision
# redispatch, a history note saying so); the dead worker is suspect and gets no new work, and all
# 10 complete on another worker, the x-death in the attempt record. A pinned execution to the
# dead worker fails as before; with --fallback any it is redispatched to the other worker.
# shellcheck disable=SC2154 # a, b are set by start_live_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=2000
# Long enough that the monitor's stale pass does not race the expiries of this test.
export WARREN__EXECUTOR__SCHEDULED_TIMEOUT_S=60
# Room for all twelve on the doomed worker (pinned dispatches count against its capacity too).
export WARREN__WORKER__MAX_CONCURRENCY=12
# An action only this test's workers offer (core.echo under another name), so executions left
# requested by other tests neither take the workers' capacity nor get in the way.
action="redispatch.$(unique_name echo)"
mkdir -p "$TEST_TMP/handlers"
ln -s "$WARREN_SOURCE_DIR/handlers/core.echo" "$TEST_TMP/handlers/$action"
export WARREN__WORKER__HANDLERS_DIR="$TEST_TMP/handlers"
forget_executions "$action"

exec_start ex
start_live_worker a doomed
A_PID=$BG_PID
kill -KILL "$A_PID"
wait "$A_PID" 2>/dev/null || true

# Still fresh for a few seconds: the scheduler sends these to the dead worker's queue.
ids=()
for i in $(seq 10); do
    ids+=("$("$WARREN_BIN" submit "$action" --params "{\"n\": $i}")")
done
pinned=$("$WARREN_BIN" submit "$action" --params '{"pinned": 1}' --worker "$a")
fallback=$("$WARREN_BIN" submit "$action" --params '{"pinned": 2}' --worker "$a" --fallback any)
unpinned=$(IFS=,; echo "${ids[*]}")
all="${ids[*]} $pinned $fallback"
all=${all// /,}
wait_until 15 "[ \"\$(psql_q \"select count(*) from execution_attempt_history where execution_id in ($all)
                               and outcome = 'worker_lost'\")\" = 12 ]"
assert_eq "$a" "$(psql_q "select string_agg(distinct worker, ',') from execution_attempt_history where execution_id in ($all)")" \
    "every first attempt went to the dead worker"
[ -n "$(psql_q "select suspect_since from workers where id = '$a'")" ] || fail "the dead worker is not suspect"
assert_eq "failed|Worker queue TTL expired|not_retryable" \
    "$(psql_q "select e.status || '|' || e.error || '|' || a.decision from executions e
               join execution_attempt_history a on a.execution_id = e.id where e.id = $pinned")" \
    "pinned without a fallback: as before (the shipped policy allows one attempt)"

start_live_worker b rescuer
wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($unpinned, $fallback)
                               and status = 'completed'\")\" = 11 ]"
for id in "${ids[@]}" "$fallback"; do
    doc=$("$WARREN_BIN" get "$id" --json)
    assert_eq "completed|$b|2|0|1|$a worker_lost redispatch expired worker.$a.executions" \
        "$(jq -r '"\(.status)|\(.worker)|\(.attempt)|\(.retries)|\(.redispatches)|\(.attempts[0] | "\(.worker) \(.outcome) \(.decision) \(.x_death[0].reason) \(.x_death[0].queue)")"' <<<"$doc")" \
        "execution $id: redispatched to the other worker, the x-death in its attempt"
    assert_contains "$(jq -r '[.events[].note // empty] | join(";")' <<<"$doc")" "redispatch 1: never started on $a"
done
assert_eq "" "$(exec_field "$fallback" pinned_worker)" "the fallback unpinned it"
assert_eq 0 "$(queue_messages "worker.$a.executions")" "nothing left in the dead worker's queue"
# The expired dispatches' records (worker_unavailable) closed themselves once the retries
# completed (schema 025); the pinned one's stays pending for a human.
assert_eq "11 cancelled warren" "$(psql_q "select count(*) || ' ' || min(resolution) || ' ' || min(resolved_by)
    from dead_letters where execution_id in ($unpinned, $fallback) and reason = 'expired'
    and notes like '%execution completed at attempt 2%'")" "the retried executions' records"
assert_eq "0" "$(psql_q "select count(*) from dead_letters where execution_id in ($unpinned, $fallback)
    and resolution = 'pending'")" "no pending record for a completed execution"
assert_eq "worker_unavailable pending" "$(psql_q "select investigation_reason || ' ' || resolution
    from dead_letters where execution_id = $pinned and reason = 'expired'")" "the pinned one's record"

stop_worker worker "$BG_PID"
exec_stop "$EXEC_PID" ex
pass
