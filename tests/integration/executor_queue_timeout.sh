#!/usr/bin/env bash
# Deadlines on waiting (docs/flow-control.md, "Deadlines"): queue_timeout_s 2 on an execution
# pinned to an absent worker (the scheduler declares its queue, nobody consumes it) and on one
# pinned to a worker whose queue exists but which is stopped: each dispatch carries an AMQP
# expiration of what is left of the 2 s, expires from the worker queue, and the dead-letter
# handler fails the execution with reason queue_timeout (a dead letter of that reason, the
# broker's x-death saying expired, the attempt failed and not retried) within 2 to 4 s; one
# that no worker offers stays requested and the executor's sweep fails it the same way (no
# dead letter, never dispatched); the action's
# actions.<ref>.queue_timeout_s applies when a submission gives none (`warren submit` on the
# database and the API); a live worker still runs work that has a deadline; bad values answer
# 400 and `warren submit --queue-timeout 0` exits 2; the counter counts both.
# shellcheck disable=SC2154 # w and stopped are set by start_live_worker / fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
isolate_topology
worker_env
qt_action=$(unique_name flow.qt) # configured with queue_timeout_s 7; no worker offers it
export WARREN__ACTIONS="$qt_action: queue_timeout_s=7"
forget_executions flow.
forget_executions core.

api_start ex
absent=$(unique_name gone) # no queue, no row
fake_worker stopped qstop  # its queue exists; nothing consumes it
nobody=$(unique_name flow.nobody) # no worker offers it: never claimed

# ---- validation ----
expect 400 POST /api/v1/executions '{"action_ref": "core.echo", "queue_timeout_s": 0}'
assert_contains "$(jq -r .detail <<<"$CALL_BODY")" "queue_timeout_s" "queue_timeout_s 0: named"
run_warren cli-qt0 submit core.echo --queue-timeout 0
assert_eq "2" "$RUN_RC" "warren submit --queue-timeout 0: usage error"
assert_contains "$RUN_ERR" "--queue-timeout wants whole seconds" "warren submit --queue-timeout 0: why"

# ---- the action's default, on the database and over the API; a submission's own wins ----
db_id=$("$WARREN_BIN" submit "$qt_action" --in 600)
api_id=$(WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" submit "$qt_action" --in 600)
own_id=$("$WARREN_BIN" submit "$qt_action" --in 600 --queue-timeout 3)
none_id=$("$WARREN_BIN" submit core.echo --in 600)
assert_eq "7|7|3|" "$(psql_q "select string_agg(coalesce(queue_timeout_s::text, ''), '|' order by id)
                            from executions where id in ($db_id, $api_id, $own_id, $none_id)")" \
    "actions.<ref>.queue_timeout_s on the database and the API; --queue-timeout wins; none without"
psql_q "update executions set status = 'cancelled' where id in ($db_id, $api_id, $own_id, $none_id)" >/dev/null

# ---- no worker offers it: still requested when the deadline passes ----
expect 201 POST /api/v1/executions "{\"action_ref\": \"$nobody\", \"queue_timeout_s\": 2}"
waiting=$(jq -r .id <<<"$CALL_BODY")
assert_eq "2" "$(jq -r .queue_timeout_s <<<"$CALL_BODY")" "the row has its queue_timeout_s"
# ---- pinned to an absent worker, and to a stopped one: the dispatch expires in the queue ----
expect 201 POST /api/v1/executions "{\"action_ref\": \"core.echo\", \"worker\": \"$absent\", \"queue_timeout_s\": 2}"
gone=$(jq -r .id <<<"$CALL_BODY")
expect 201 POST /api/v1/executions "{\"action_ref\": \"core.echo\", \"worker\": \"$stopped\", \"queue_timeout_s\": 2}"
held=$(jq -r .id <<<"$CALL_BODY")
wait_until 6 "[ \"\$(psql_q \"select count(*) from executions where id in ($waiting, $gone, $held) and status = 'failed'\")\" = 3 ]"
for id in $waiting $gone $held; do
    took=$(psql_q "select round(extract(epoch from ended_at - created_at)::numeric, 1) from executions where id = $id")
    log "execution $id failed after $took s"
    awk -v t="$took" 'BEGIN { exit !(t >= 2 && t < 4) }' || fail "execution $id failed after $took s, not within 2..4 s"
    assert_eq "queue_timeout" "$(psql_q "select result ->> 'reason' from executions where id = $id")" \
        "execution $id: reason queue_timeout"
    assert_contains "$(exec_field "$id" error)" "Queue timeout passed" "execution $id: the error says so"
done
assert_eq "0|0" "$(psql_q "select attempt || '|' || (select count(*) from dead_letters d where d.execution_id = e.id)
                          from executions e where id = $waiting")" \
    "the one no worker offers was never dispatched; the sweep leaves no dead letter"
assert_contains "$(psql_q "select result ->> 'message' from executions where id = $waiting")" \
    "still requested" "the sweep's result says where it waited"
# The expiration path: a dead letter of reason queue_timeout, from the worker queue, expired.
for pair in "$gone:$absent" "$held:$stopped"; do
    id=${pair%%:*} worker=${pair#*:}
    assert_eq "1" "$(exec_field "$id" attempt)" "execution $id was dispatched once"
    wait_until 5 "[ \"\$(psql_q \"select count(*) from dead_letters where execution_id = $id\")\" = 1 ]"
    assert_eq "queue_timeout|worker.$worker.executions|expired" \
        "$(psql_q "select reason || '|' || queue || '|' || (headers -> 'x-death' -> 0 ->> 'reason') from dead_letters where execution_id = $id")" \
        "execution $id: the dispatch expired from the worker queue: a queue_timeout dead letter"
    assert_eq "failed|not_retryable" "$(psql_q "select outcome || '|' || decision from execution_attempts where execution_id = $id")" \
        "execution $id: the attempt failed (not worker_lost) and is not retried"
    assert_contains "$(psql_q "select result ->> 'message' from executions where id = $id")" \
        "past the execution's queue deadline" "execution $id: the result says which deadline"
    assert_eq "0" "$(queue_messages "worker.$worker.executions")" "the queue of $worker is empty"
done

# ---- a live worker runs work with a deadline ----
start_live_worker w qlive
expect 201 POST /api/v1/executions "{\"action_ref\": \"core.echo\", \"worker\": \"$w\", \"queue_timeout_s\": 5}"
ok=$(jq -r .id <<<"$CALL_BODY")
wait_until 10 "[ \"\$(exec_field $ok status)\" = completed ]"

# ---- the counter counts both paths ----
n=$(curl -sS "$API/metrics" | awk '$1 == "warren_queue_timeouts_total" { print $2 }')
assert_eq "3" "$n" "warren_queue_timeouts_total"
wait_log ex '"msg":"execution failed: queue timeout passed while requested".*"reason":"queue_timeout"' 1
pass
