#!/usr/bin/env bash
# Retired workers (docs/retries.md): a worker gone longer than worker.retire_after_s with
# dispatches still in its queue is retired by the executor: every message is taken back and
# recorded (a worker_retired dead letter each), the unpinned executions are redispatched and reach
# another worker, the pinned one fails saying why, the queue is deleted and the row says retired;
# nothing is lost. A dispatch pinned to it afterwards waits in its queue declared again. The
# worker heartbeating again registers as online.
# shellcheck disable=SC2154 # a, b are set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack
isolate_topology
export WARREN__WORKER__RETIRE_AFTER_S=3
action="retire.$(unique_name a)"
forget_executions "$action"

exec_start ex
fake_worker a gone
heartbeat_seen "$a" "$action" 10 1
ids=()
for i in 1 2 3; do ids+=("$(new_execution "$action")"); done
pinned=$(new_execution "$action" "$a")
unpinned=$(IFS=,; echo "${ids[*]}")
all="${ids[*]} $pinned"
all=${all// /,}
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($all) and status = 'scheduled'
                               and dispatch_confirmed_at is not null and worker = '$a'\")\" = 4 ]"
wait_until 10 "[ \"\$(queue_messages worker.$a.executions)\" = 4 ]"

# No more heartbeats: stale after 3 s, retired once the last one is 3 s old.
wait_until 20 "[ \"\$(psql_q \"select status from workers where id = '$a'\")\" = retired ]"
assert_eq 404 "$(mgmt_status "queues/%2F/worker.$a.executions")" "the retired worker's queue is gone"
assert_eq 4 "$(psql_q "select count(*) from dead_letters where reason = 'worker_retired'
                       and execution_id in ($all) and body_text like '%ExecutionRequested%'")" \
    "every message taken back is recorded with its body"
assert_eq "worker_unavailable" "$(psql_q "select string_agg(distinct investigation_reason, ',')
    from dead_letters where reason = 'worker_retired' and execution_id in ($all)")" \
    "a retired worker's message is an unavailable worker's, not poison (schema 025)"
for id in "${ids[@]}"; do
    assert_eq "requested|0|1|worker_lost redispatch Worker $a retired with this dispatch still queued" \
        "$(psql_q "select e.status || '|' || e.retries || '|' || e.redispatches || '|' || a.outcome || ' ' || a.decision || ' ' || a.error
                   from executions e join execution_attempt_history a on a.execution_id = e.id where e.id = $id")" \
        "unpinned execution $id: redispatched (never started), not a retry"
done
assert_eq "failed|Worker $a retired with this dispatch still queued|not_retryable" \
    "$(psql_q "select e.status || '|' || e.error || '|' || a.decision from executions e
               join execution_attempt_history a on a.execution_id = e.id where e.id = $pinned")" \
    "the pinned execution fails saying why (its policy allows one attempt)"
assert_eq retired "$("$WARREN_BIN" workers --json | jq -r --arg a "$a" '.[] | select(.id == $a) | .state')" \
    "warren workers says retired"

# A dispatch pinned to the retired worker still waits in its queue (declared again), as for any
# worker that is not there, and expires from it (worker.{id}.executions exists again).
late=$(new_execution "$action" "$a")
wait_until 15 "[ \"\$(psql_q \"select status from executions where id = $late
                               and dispatch_confirmed_at is not null\")\" = scheduled ]"
wait_until 10 "[ \"\$(queue_messages worker.$a.executions)\" = 1 ]"

# Nothing lost: another worker gets the three.
fake_worker b heir
heartbeat_seen "$b" "$action" 10 60
wait_until 15 "[ \"\$(queue_messages worker.$b.executions)\" = 3 ]"
assert_eq 3 "$(psql_q "select count(*) from executions where id in ($unpinned)
                       and status = 'scheduled' and worker = '$b' and attempt = 2")" "dispatched again"

# The retired worker comes back: it registers again.
heartbeat "$a" "$action" 10 1
wait_until 10 "[ \"\$(psql_q \"select status from workers where id = '$a'\")\" = online ]"

exec_stop "$EXEC_PID" ex
pass
