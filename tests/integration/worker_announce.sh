#!/usr/bin/env bash
# A starting worker declares its queue with the configured TTL and dead-letter exchange, consumes
# it with prefetch = max_concurrency, and announces itself, then heartbeats, with its capabilities
# and its incarnation, which a restart under the same name replaces.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=45000
export WARREN__WORKER__MAX_CONCURRENCY=3

new_worker w announce
wq="worker.$w.executions"
start_worker worker "$w"

q=$(queue_json "$wq")
assert_eq 45000 "$(jq '.arguments["x-message-ttl"]' <<<"$q")" "queue TTL"
assert_eq "$TOPO_DLX" "$(jq -r '.arguments["x-dead-letter-exchange"]' <<<"$q")" "queue DLX"
assert_eq true "$(jq '.durable' <<<"$q")" "queue durable"
assert_eq "execution.dispatch.worker.$w" "$(binding_keys "$TOPO_EXCHANGE" "$wq")" "binding"
assert_eq fanout "$(exchange_json "$TOPO_DLX" | jq -r .type)" "the DLX the queue names exists"

consumer() { mgmt_get consumers | jq -c --arg q "$wq" '[.[] | select(.queue.name == $q)]'; }
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 15 '[ "$(consumer | jq length)" = 1 ]'
assert_eq 3 "$(consumer | jq '.[0].prefetch_count')" "prefetch = max_concurrency"
assert_eq false "$(consumer | jq '.[0].ack_required | not')" "manual acks"

hb=$(wait_msg "$TOPO_HEARTBEATS" "$(is_heartbeat "$w")")
assert_eq "worker.heartbeat.$w" "$(jq -r .routing_key <<<"$hb")" "heartbeat routing key"
assert_eq WorkerHeartbeat "$(jq -r .properties.type <<<"$hb")" "heartbeat type property"
assert_eq "$(jq -r .body.message_id <<<"$hb")" "$(jq -r .properties.message_id <<<"$hb")" \
    "message_id property = envelope message_id"
p=$(jq -c .body.payload <<<"$hb")
assert_eq online "$(jq -r .status <<<"$p")" "status"
assert_eq true "$(jq '.capabilities | index("core.echo") != null and index("core.noop") != null' <<<"$p")" \
    "capabilities include core.echo and core.noop: $p"
assert_eq 3 "$(jq .capacity <<<"$p")" "capacity"
assert_eq 0 "$(jq .running <<<"$p")" "running"
assert_eq 1 "$(jq .heartbeat_interval_s <<<"$p")" "heartbeat interval"
assert_eq "$(hostname)" "$(jq -r .host <<<"$p")" "host"
assert_eq "warren $(jq -r .version <<<"$p")" "$("$WARREN_BIN" version)" "version"
assert_contains "$(jq -r .started_at <<<"$p")" "T" "started_at is a timestamp"
assert_eq worker "$(jq -r .body.headers.source <<<"$hb")" "envelope source"

inc=$(jq -r .incarnation <<<"$p")
[[ "$inc" =~ ^[0-9a-f]{32}$ ]] || fail "incarnation is not 32 lowercase hex characters: $inc"
wait_log worker '"msg":"worker starting".*"incarnation":"'"$inc"'"' 1

# ... and then every heartbeat_interval_s, all with the same incarnation.
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 10 '[ "$(msgs "$TOPO_HEARTBEATS" "$(is_heartbeat "$w")" | jq length)" -ge 3 ] || { collect "$TOPO_HEARTBEATS"; false; }'
assert_eq "[\"$inc\"]" "$(msgs "$TOPO_HEARTBEATS" "$(is_heartbeat "$w")" | jq -c '[.[].body.payload.incarnation] | unique')" \
    "one incarnation per process"

# The same name again is another process: another incarnation.
stop_worker worker "$BG_PID"
mgmt_delete "queues/%2F/$TOPO_HEARTBEATS" >/dev/null
start_worker worker2 "$w"
hb2=$(wait_msg "$TOPO_HEARTBEATS" "$(is_heartbeat "$w")")
inc2=$(jq -r .body.payload.incarnation <<<"$hb2")
[[ "$inc2" =~ ^[0-9a-f]{32}$ ]] || fail "second incarnation: $inc2"
[ "$inc2" != "$inc" ] || fail "a restarted worker kept its incarnation $inc"
pass
