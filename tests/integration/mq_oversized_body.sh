#!/usr/bin/env bash
# A body over message_queue.max_body_bytes (1 MiB) is never held whole, whatever the broker
# admits. With the stack's max_message_size (16 MiB) the broker refuses a 50 MiB publish, and a
# 12 MiB body it admits is recorded by its first 4096 bytes. With the limit raised to RabbitMQ's
# default (128 MiB, a broker set up without it) a 50 MiB body goes to every queue the executor
# consumes and to a worker's queue: the executor and the worker stay under 64 MiB, each body
# becomes one dead_letters row (reason oversized: headers, size, first bytes, never the whole
# body), every queue is acked empty, and an execution still runs to completion afterwards.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

MIB=$((1024 * 1024))
LIMIT=$MIB        # message_queue.max_body_bytes, the default
PREFIX=4096       # MQ_BODY_PREFIX_BYTES
RSS_BOUND_KB=$((64 * 1024))
# Under AddressSanitizer (the sanitize run sets ASAN_OPTIONS) shadow memory, redzones and the
# fibers' larger stacks add to every process: the executor peaks at about 67-77 MiB there since
# its lanes and fibers (issue 18), against about 14 MiB without ASan. A body held whole would
# still be 50 MiB per queue on top.
[ -z "${ASAN_OPTIONS:-}" ] || RSS_BOUND_KB=$((96 * 1024))
tag=$RANDOM$RANDOM

# big SIZE MARK: a body of SIZE bytes that starts with MARK, then 'z' to the end.
big() { { printf '%s' "$2"; head -c $(($1 - ${#2})) /dev/zero | tr '\0' 'z'; }; }

# send SIZE CASE ARGS...: a big body marked "CASE TAG " with header x-case: CASE, published
# with amqp-publish ARGS (exchange, routing key); the publisher's status is returned.
send() {
    local size=$1 case=$2
    shift 2
    big "$size" "$case $tag " | amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" \
        -H "x-case: $case" -H "x-tag: $tag" "$@" 2>"$TEST_TMP/publish-$case.err"
}

hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

exec_start ex
new_worker w big
start_worker worker "$w"
WORKER_PID=$BG_PID
wait_until 15 "[ \"\$(psql_q \"select status from workers where id = '$w'\")\" = online ]"

# The stack's broker refuses a body over its max_message_size at publish (406, channel closed):
# nothing is queued.
rc=0
send $((50 * MIB)) refused -r "$TOPO_DLQ" || rc=$?
[ "$rc" != 0 ] || fail "the broker took a 50 MiB publish despite max_message_size"
assert_contains "$(cat "$TEST_TMP/publish-refused.err")" "larger than configured max size 16777216" \
    "the broker's refusal"

# What it admits above max_body_bytes is recorded by its prefix.
send $((12 * MIB)) admitted -r "$TOPO_DLQ"

rows() { psql_q "select count(*) from dead_letters where headers->>'x-tag' = '$tag' $1"; }
wait_until 20 "[ \"\$(rows '')\" = 1 ]"

# A broker without the setting: RabbitMQ's default, for new channels (amqp-publish opens one).
rmq eval 'application:set_env(rabbit, max_message_size, 134217728).' >/dev/null
on_exit "rmq eval 'application:set_env(rabbit, max_message_size, 16777216).' >/dev/null"
send $((50 * MIB)) dlq -r "$TOPO_DLQ"
send $((50 * MIB)) dlx -e "$TOPO_DLX" -r "execution.dispatch.worker.$w"
send $((50 * MIB)) parking -r "$TOPO_PARKING"
send $((50 * MIB)) results -e "$TOPO_EXCHANGE" -r "execution.completed.$w"
send $((50 * MIB)) heartbeats -e "$TOPO_EXCHANGE" -r "worker.heartbeat.$w"
# The worker cannot use it either: it rejects it, and the broker dead-letters it to the executor.
send $((50 * MIB)) dispatch -e "$TOPO_EXCHANGE" -r "execution.dispatch.worker.$w"
rmq eval 'application:set_env(rabbit, max_message_size, 16777216).' >/dev/null

wait_until 60 "[ \"\$(rows '')\" = 7 ]"
for q in "$TOPO_DLQ" "$TOPO_PARKING" "$TOPO_RESULTS" "$TOPO_HEARTBEATS" "worker.$w.executions"; do
    wait_until 10 "[ \"\$(queue_messages '$q')\" = 0 ]"
done

ex_hwm=$(hwm_kb "$EXEC_PID")
worker_hwm=$(hwm_kb "$WORKER_PID")
log "peak RSS: executor ${ex_hwm} kB, worker ${worker_hwm} kB"
[ "$ex_hwm" -lt "$RSS_BOUND_KB" ] || fail "executor peak RSS ${ex_hwm} kB, bound $RSS_BOUND_KB kB"
[ "$worker_hwm" -lt "$RSS_BOUND_KB" ] || fail "worker peak RSS ${worker_hwm} kB, bound $RSS_BOUND_KB kB"

# One row per body: reason, the size in the error, the headers, the first bytes and no more.
assert_eq 7 "$(rows "and reason = 'oversized' and length(body) = $PREFIX
    and body_text = convert_from(body, 'UTF8') and body_text like headers->>'x-case' || ' $tag zzz%'")" \
    "rows with the prefix of their own body"
for c in admitted dlq dlx parking results heartbeats dispatch; do
    size=$((50 * MIB))
    [ "$c" = admitted ] && size=$((12 * MIB))
    assert_eq "body of $size bytes exceeds message_queue.max_body_bytes ($LIMIT); only its first $PREFIX bytes were kept" \
        "$(psql_q "select error from dead_letters where headers->>'x-tag' = '$tag' and headers->>'x-case' = '$c'")" \
        "the error of $c"
done
assert_eq "worker.$w.executions|rejected" \
    "$(psql_q "select queue, headers->'x-death'->0->>'reason' from dead_letters
        where headers->>'x-tag' = '$tag' and headers->>'x-case' = 'dispatch'")" \
    "the worker's rejection kept its x-death"
assert_eq "$TOPO_RESULTS|$TOPO_HEARTBEATS|$TOPO_PARKING" \
    "$(psql_q "select string_agg(queue, '|' order by array_position(array['results', 'heartbeats', 'parking'], headers->>'x-case'))
        from dead_letters where headers->>'x-tag' = '$tag' and headers->>'x-case' in ('results', 'heartbeats', 'parking')")" \
    "recorded from the queue that held them"
wait_log worker '"msg":"dispatch rejected; dead-lettered".*exceeds message_queue.max_body_bytes' 5

# Processing goes on.
id=$(new_execution core.echo "$w" '{"after": "big"}')
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq '{"after": "big"}' "$(exec_field "$id" result)" "an execution after the big bodies"

exec_stop "$EXEC_PID" ex
assert_contains "$(stat_of "$EXEC_STATS" dead_letters)" "oversized=7" "counted by reason"
pass
