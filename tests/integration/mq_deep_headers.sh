#!/usr/bin/env bash
# A message whose headers nest tables as deep as one frame holds (about 18,700 levels: rabbitmq-c
# decodes and copies header tables recursively, with no depth bound) reaches the executor's
# results queue, its dead-letter queue and a worker's queue. Nobody crashes (this once took the
# executor down with SIGSEGV and no log line, and the message, still queued, brought it down again
# at every start); each message is recorded and acknowledged like any other unusable message, and
# the processes still work and stop cleanly afterwards, passing bodies of several frames each way.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe
worker_env

deep() { # EXCHANGE:KEY MESSAGE_ID
    "$PROBE" deep -I "$2" "$1" >"$TEST_TMP/deep.$2.out" 2>&1 ||
        fail "publishing the deep message: $(tail -3 "$TEST_TMP/deep.$2.out")"
    log "$(grep '^deep ' "$TEST_TMP/deep.$2.out")"
}
# shellcheck disable=SC2317 # called in wait_until's condition
records() { # QUEUE: open records of the queue, as reason:occurrences
    psql_q "select coalesce(string_agg(reason || ':' || occurrences, ',' order by reason), '')
            from dead_letters where queue = '$1' and resolution in ('pending', 'investigating')"
}

exec_start ex
ex_pid=$EXEC_PID

log "the results queue"
deep "$TOPO_EXCHANGE:execution.completed.deep-$RANDOM" "deep-result-$RANDOM"
depth=$(awk '/^deep /{ sub("depth=", "", $2); print $2 }' "$TEST_TMP"/deep.deep-result-*.out)
[ "$depth" -gt 18000 ] || fail "the probe nested only $depth tables: the test would prove little"
wait_until 15 "[ \"\$(records '$TOPO_RESULTS')\" = parse_error:1 ]"
wait_until 10 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"
kill -0 "$ex_pid" 2>/dev/null || fail "the executor died: $(tail -3 "$(bg_log ex)")"
assert_eq '"(nested too deep)"' "$(psql_q "select headers #> '{a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a}'
    from dead_letters where queue = '$TOPO_RESULTS'")" "the stored headers stop at their depth bound"
wait_log ex '"unreadable result message stored as a dead letter"' 5

log "the dead-letter queue"
deep "$TOPO_DLX:anything" "deep-dlq-$RANDOM"
wait_until 15 "[ \"\$(records '$TOPO_DLQ')\" = parse_error:1 ]"
wait_until 10 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"
kill -0 "$ex_pid" 2>/dev/null || fail "the executor died: $(tail -3 "$(bg_log ex)")"

log "a worker's queue: rejected into the dead-letter queue, where the executor records it"
new_worker w deep
start_worker worker "$w"
worker_pid=$BG_PID
deep "$TOPO_EXCHANGE:execution.dispatch.worker.$w" "deep-dispatch-$RANDOM"
wait_log worker '"msg":"dispatch rejected; dead-lettered"' 15
# Its x-death makes the header frame larger than frame_max (RabbitMQ checks only what it receives).
# Like every unusable message it folds into the open record of its kind: a second occurrence.
wait_until 15 "[ \"\$(records '$TOPO_DLQ')\" = parse_error:2 ]"
wait_log ex "\"msg\":\"dead letter stored\".*\"queue\":\"worker.$w.executions\"" 5
wait_until 10 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"
assert_eq 0 "$(grep -c 'RabbitMQ connection lost' "$(bg_log ex)")" "connections the executor lost"
kill -0 "$worker_pid" 2>/dev/null || fail "the worker died: $(tail -3 "$(bg_log worker)")"

log "both still work: an execution whose params and result span several frames each"
id=$(psql_q "insert into executions (action_ref, pinned_worker, params)
    values ('core.echo', '$w', jsonb_build_object('pad', repeat('x', 300000))) returning id")
on_exit "psql_q \"update executions set status = 'cancelled' where id = $id and status not in ('completed', 'failed', 'cancelled')\" >/dev/null 2>&1"
wait_until 20 "[ \"\$(exec_field $id status)\" = completed ]"
assert_eq 300000 "$(exec_field "$id" "length(result ->> 'pad')")" "the 300 kB result came back whole"
stop_worker worker "$worker_pid"
assert_contains "$WORKER_STATS" '"rejected":"1"'
assert_contains "$WORKER_STATS" '"completed":"1"'
exec_stop "$ex_pid" ex
pass
