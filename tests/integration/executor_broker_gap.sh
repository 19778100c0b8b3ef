#!/usr/bin/env bash
# The executor's own broker outage is not counted against the workers: heartbeats it could not
# hear do not make a healthy worker stale, so its running executions are not abandoned; the stale
# rule counts from when the executor hears again (executor_state.heard_since). And once the broker
# is back the executor works again within seconds, though its breakers opened during the outage
# (open_timeout_s 30): a successful reconnect half-opens them at once.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker w gap
action=$(unique_name act)
forget_executions "$action"
on_exit "stack rabbit-start >/dev/null 2>&1"
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
waiting=$(new_execution "$action" "$w") # pinned: claimed and published at once, which fails: the publish breaker opens
sleep 8 # twice the stale window: the executor hears nothing, the monitor keeps running
assert_eq running "$(exec_field "$id" status)" "not abandoned while the executor cannot hear"
assert_eq requested "$(exec_field "$waiting" status)" "waits while the broker is away"
wait_log ex '"circuit breaker state change","breaker":"messaging","from":"closed","to":"open"' 5
stack rabbit-start
back=$(date +%s)
log "broker back"
wait_until 40 "[ \"\$(psql_q \"select extract(epoch from now() - last_heartbeat) < 2 from workers where id = '$w'\")\" = t ]"
heard=$(($(date +%s) - back))
wait_until 40 "[ \"\$(exec_field $waiting status)\" = scheduled ]"
dispatched=$(($(date +%s) - back))
log "heartbeats heard again after ${heard}s, the waiting execution dispatched after ${dispatched}s"
{ [ "$heard" -le 10 ] && [ "$dispatched" -le 10 ]; } ||
    fail "the executor resumed ${heard}s / ${dispatched}s after the broker came back (breaker open_timeout_s is 30)"
sleep 3 # the monitor runs every second
assert_eq running "$(exec_field "$id" status)" "not abandoned once the heartbeats are heard again"
assert_eq t "$(psql_q "select heard_since > now() - interval '60 seconds' from executor_state")" \
    "heard_since recorded after the outage"
report "$w" "$id" 1 completed '{"healthy": true}'
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"
# (the fake worker consumes nothing: the first execution's dispatch is still there too)
assert_eq 2 "$(queue_messages "worker.$w.executions")" "the waiting execution's dispatch, once"

exec_stop "$EXEC_PID" ex
assert_eq 0 "$(stat_of "$EXEC_STATS" monitor_abandoned)" "nothing abandoned"
pass
