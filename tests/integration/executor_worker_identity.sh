#!/usr/bin/env bash
# Per-worker broker identities (executor.worker_identity = per_worker, users made by
# scripts/worker-user): worker B cannot pass for worker A. The broker refuses B's report that
# claims A's user_id (406) or is routed under A's name (403, topic permissions); the executor
# refuses and records B's report that names A (forged_identity), B's report in its own name on
# A's execution (wrong_worker), one without a user_id, B's heartbeat for A, and a dispatch B
# forges into the dead-letter exchange. A's execution is unaffected and completes normally on
# the real worker A, which runs with only its own user's permissions; a dispatch that really
# expires is still failed by the dead-letter handler.
# shellcheck disable=SC2154 # a, b, gone are set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe
worker_env
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=2000
export WARREN__EXECUTOR__WORKER_IDENTITY=per_worker

new_worker a ida
new_worker b idb
new_worker gone gone # never runs: its dispatch expires
worker_user() {
    printf '%s\n' "$2" | bash "$WARREN_SOURCE_DIR/scripts/worker-user" "$1" >/dev/null ||
        fail "scripts/worker-user $1"
    on_exit "bash '$WARREN_SOURCE_DIR/scripts/worker-user' --delete '$1' >/dev/null 2>&1"
}
pw_a=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
pw_b=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
worker_user "$a" "$pw_a"
worker_user "$b" "$pw_b"
url_a="amqp://$a:$pw_a@127.0.0.1:$WARREN_AMQP_PORT/%2f"
url_b="amqp://$b:$pw_b@127.0.0.1:$WARREN_AMQP_PORT/%2f"

exec_start ex
wait_log ex '"per-worker identities' 5
# The real worker A, logged in as its own broker user: it declares, consumes and reports.
on_exit "psql_q \"update executions set status = 'cancelled' where pinned_worker in ('$a', '$gone')
    and status in ('requested', 'scheduled', 'running', 'canceling')\" >/dev/null 2>&1"
bg_start wa env "WARREN__MESSAGE_QUEUE__RABBITMQ__URL=$url_a" "$WARREN_BIN" worker --name "$a"
wait_log wa '"msg":"consuming dispatches"' 20
wait_until 15 "[ \"\$(psql_q \"select status from workers where id = '$a'\")\" = online ]"

id=$(psql_q "insert into executions (action_ref, pinned_worker, params, timeout_s)
             values ('core.sleep', '$a', '{\"seconds\": 4}', 30) returning id")
wait_until 15 "[ \"\$(exec_field $id status)\" = running ]"
assert_eq "$a|1" "$(exec_field "$id" "worker, attempt")" "A runs its execution"

completion() { # WORKER_ID: a completion of A's execution that says it comes from WORKER_ID
    envelope ExecutionCompleted "$(jq -cn --arg w "$1" --argjson id "$id" \
        '{execution_id: $id, worker_id: $w, attempt: 1, status: "completed",
          result: {forged: true}}')" 1
}
forge() { # OUT KEY [mq_probe options]: publish as B to the executions exchange
    local out=$1 key=$2
    shift 2
    "$PROBE" publish -u "$url_b" -T ExecutionCompleted "$@" "$TOPO_EXCHANGE:$key" \
        >"$TEST_TMP/$out.out" 2>&1 || true
}

# The broker: B cannot claim A's user_id, nor route under A's name.
forge as_a "execution.completed.$b" -U "$a" -B "$(completion "$a")"
assert_contains "$(cat "$TEST_TMP/as_a.out")" "status=closed_by_broker" "user_id of A refused"
assert_contains "$(cat "$TEST_TMP/as_a.out")" "406 PRECONDITION_FAILED - user_id property set to '$a'"
forge key_a "execution.completed.$a" -B "$(completion "$a")"
assert_contains "$(cat "$TEST_TMP/key_a.out")" "status=closed_by_broker" "A's routing key refused"
assert_contains "$(cat "$TEST_TMP/key_a.out")" "403 ACCESS_REFUSED - access to topic 'execution.completed.$a'"
forge key_a_hb "worker.heartbeat.$a" -B '{}'
assert_contains "$(cat "$TEST_TMP/key_a_hb.out")" "403 ACCESS_REFUSED" "A's heartbeat key refused"

# The executor: what the broker lets B send is B's, and B's is not A's.
forge names_a "execution.completed.$b" -B "$(completion "$a")"
assert_contains "$(cat "$TEST_TMP/names_a.out")" "status=ok" "B's own key and user_id pass the broker"
forge own_name "execution.completed.$b" -B "$(completion "$b")"
assert_contains "$(cat "$TEST_TMP/own_name.out")" "status=ok"
amqp-publish --url "$url_b" -e "$TOPO_EXCHANGE" -r "execution.completed.$b" -C application/json \
    -b "$(completion "$b")" || fail "publish without user_id"
"$PROBE" publish -u "$url_b" -T WorkerHeartbeat \
    -B "$(envelope WorkerHeartbeat "$(jq -cn --arg w "$a" '{worker_id: $w, capabilities: ["core.echo", "secret.action"],
        capacity: 99, heartbeat_interval_s: 60}')")" "$TOPO_EXCHANGE:worker.heartbeat.$b" \
    >"$TEST_TMP/hb.out" 2>&1 || fail "heartbeat as B: $(cat "$TEST_TMP/hb.out")"
"$PROBE" publish -u "$url_b" -T ExecutionRequested \
    -B "$(envelope ExecutionRequested "{\"execution_id\": $id, \"worker_id\": \"$a\",
        \"action_ref\": \"core.sleep\", \"params\": {}, \"attempt\": 1, \"timeout_s\": 0}" 1)" \
    "$TOPO_DLX:execution.dispatch.worker.$a" >"$TEST_TMP/dlx.out" 2>&1 ||
    fail "publish to the dead-letter exchange as B: $(cat "$TEST_TMP/dlx.out")"

reasons() {
    psql_q "select string_agg(reason || '@' || queue, ' ' order by reason, queue) from dead_letters
            where execution_id = $id"
}
want="forged_identity@$TOPO_DLQ forged_identity@$TOPO_RESULTS forged_identity@$TOPO_RESULTS wrong_worker@$TOPO_RESULTS"
wait_until 15 "[ \"\$(reasons)\" = '$want' ]"
assert_eq "$want" "$(reasons)" "every forgery recorded against A's execution"
errors=$(psql_q "select string_agg(error, ' | ' order by error) from dead_letters where execution_id = $id")
assert_contains "$errors" "sent by broker user '$b', not by worker '$a'" "report naming A"
assert_contains "$errors" "no user_id" "report without user_id"
assert_contains "$errors" "sent by broker user '$b', not by the executor" "forged dead letter"
assert_contains "$errors" "a report from worker '$b' on attempt 1, which was dispatched to worker '$a'"
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where reason = 'forged_identity'
    and queue = '$TOPO_HEARTBEATS'\")\" = 1 ]"
assert_eq "16|f" "$(psql_q "select capacity, 'secret.action' = any(capabilities) from workers where id = '$a'")" \
    "A's row untouched by B's heartbeat"
assert_eq "running|$a|1" "$(exec_field "$id" "status, worker, attempt")" "A's execution unaffected"

# A completes it normally.
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq "$a|1|{\"slept\": 4}" "$(exec_field "$id" "worker, attempt, result")" "A's own completion applied"

# Real broker dead-lettering keeps the executor's user_id: an expired dispatch still fails.
gone_id=$(new_execution core.echo "$gone")
wait_until 15 "[ \"\$(exec_field $gone_id status)\" = failed ]"
assert_eq "Worker queue TTL expired|expired" \
    "$(psql_q "select e.error, d.reason from executions e join dead_letters d on d.execution_id = e.id
               where e.id = $gone_id")" "expired dispatch in per_worker mode"

bg_stop wa 15 || true
exec_stop "$EXEC_PID" ex
pass
