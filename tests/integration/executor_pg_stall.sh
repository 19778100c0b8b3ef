#!/usr/bin/env bash
# A database that stops answering without closing its connections (SIGSTOP on PostgreSQL, as in
# a failover or a partition) never holds the executor's loop: its AMQP connections stay up (no
# missed heartbeats), it logs the timeout, and it finishes the work soon after the database is back.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w stall
action=$(unique_name act)
forget_executions "$action"
# AMQP heartbeats every 4 s: a loop held for more than a few seconds loses its connections.
export WARREN__MESSAGE_QUEUE__RABBITMQ__HEARTBEAT_S=4 WARREN__DATABASE__STATEMENT_TIMEOUT_MS=1000
export WARREN__DATABASE__CONNECT_TIMEOUT_S=2
exec_start ex
heartbeat_seen "$w" "$action"
ids=()
for _ in 1 2 3 4; do ids+=("$(new_execution "$action")"); done
list=$(IFS=,; echo "${ids[*]}")
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($list) and status = 'scheduled'\")\" = 4 ]"
for id in "${ids[@]}"; do report "$w" "$id" 1 running; done
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($list) and status = 'running'\")\" = 4 ]"

# The executor's six AMQP connections, by name (client address and port): the same ones must
# remain.
exec_conns() {
    mgmt_get connections | jq -r '[.[] | select(.client_properties.connection_name == "warren-executor")
        | .name] | sort | join(",")'
}
wait_until 10 "[ \"\$(exec_conns | tr ',' '\n' | grep -c .)\" = 6 ]"
before=$(exec_conns)
rabbit_log="$WARREN_STACK_DIR/rabbit/log/$WARREN_RABBIT_NODE.log"
missed_before=$(grep -c 'missed heartbeats' "$rabbit_log" || true)

# Stop every PostgreSQL process (by pid: the postmaster and its children), 20 s.
pg_pids() {
    local pm
    pm=$(head -n 1 "$WARREN_STACK_DIR/pg/data/postmaster.pid")
    # shellcheck disable=SC2046 # one PID a word
    echo "$pm" $(pgrep -P "$pm" || true)
}
pids=$(pg_pids)
on_exit "kill -CONT $pids 2>/dev/null || true"
log "SIGSTOP postgres: $pids"
# shellcheck disable=SC2086 # a list of PIDs, split on purpose
kill -STOP $pids
# Work keeps arriving: completions the executor cannot store yet.
for id in "${ids[@]}"; do report "$w" "$id" 1 completed '{"after": "stall"}'; done
sleep 20
# shellcheck disable=SC2086 # a list of PIDs, split on purpose
kill -CONT $pids
log "SIGCONT postgres"
resumed=$(date +%s)

wait_until 20 "[ \"\$(psql_q \"select count(*) from executions where id in ($list) and status = 'completed'\")\" = 4 ]"
took=$(($(date +%s) - resumed))
log "completed ${took}s after the database came back"
[ "$took" -le 12 ] || fail "the executor took ${took}s to finish after the database came back"
assert_eq "$before" "$(exec_conns)" "the executor's AMQP connections stayed up"
assert_eq "$missed_before" "$(grep -c 'missed heartbeats' "$rabbit_log" || true)" "no missed heartbeats"
assert_contains "$(cat "$(bg_log ex)")" "did not answer within" "the timeout is logged"
exec_stop "$EXEC_PID" ex
pass
