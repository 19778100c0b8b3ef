#!/usr/bin/env bash
# The executor's own broker outage is not counted against the workers: heartbeats it could not
# hear do not make a healthy worker stale, so its running executions are not abandoned; the stale
# rule counts from when the executor hears again (executor_state.heard_since).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w gap
action=$(unique_name act)
forget_executions "$action"
on_exit "stack rabbit-start >/dev/null 2>&1"
run_warren declare topology declare --worker "$w"
assert_eq 0 "$RUN_RC" "declare the worker queue ($RUN_ERR)"
# Stale after 2 x 2 s without a heartbeat; the broker will be away for longer than that.
export WARREN__EXECUTOR__HEARTBEAT_STALE_FACTOR=2
export WARREN__MESSAGE_QUEUE__RABBITMQ__CONNECT_TIMEOUT_MS=1000
export WARREN__MESSAGE_QUEUE__RABBITMQ__PUBLISH_TIMEOUT_MS=1000
exec_start ex

# A healthy worker: a heartbeat every second whenever the broker takes it.
beat() { while :; do heartbeat "$w" "$action" 10 2 >/dev/null 2>&1 || true; sleep 1; done; }
beat &
beater=$!
on_exit "kill $beater 2>/dev/null || true"
wait_until 10 "[ \"\$(psql_q \"select count(*) from workers where id = '$w'\")\" = 1 ]"
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
report "$w" "$id" 1 running
wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"

stack rabbit-stop
log "broker stopped"
sleep 8 # twice the stale window: the executor hears nothing, the monitor keeps running
assert_eq running "$(exec_field "$id" status)" "not abandoned while the executor cannot hear"
stack rabbit-start
log "broker back"
wait_until 40 "[ \"\$(psql_q \"select extract(epoch from now() - last_heartbeat) < 2 from workers where id = '$w'\")\" = t ]"
sleep 3 # the monitor runs every second
assert_eq running "$(exec_field "$id" status)" "not abandoned once the heartbeats are heard again"
assert_eq t "$(psql_q "select heard_since > now() - interval '60 seconds' from executor_state")" \
    "heard_since recorded after the outage"
report "$w" "$id" 1 completed '{"healthy": true}'
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"

exec_stop "$EXEC_PID" ex
assert_eq 0 "$(stat_of "$EXEC_STATS" monitor_abandoned)" "nothing abandoned"
pass
