#!/usr/bin/env bash
# 1,000 executions retried at once after a shared failure spread their retries over the jitter
# window (docs/retries.md): a worker dies with 1,000 dispatches in its queue (a 5 s TTL, so all
# are dispatched first); they expire within a second or two, all worker_lost; with full jitter over a 20 s window the retries' delays fall
# evenly into ten 2 s buckets instead of one. The histogram is printed; the largest bucket must
# stay under 1.5 x the even share (100), the smallest over half of it.
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack
isolate_topology
N=1000 WINDOW_MS=20000 BUCKETS=10
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=5000
export WARREN__RETRY__BASE_MS=$WINDOW_MS WARREN__RETRY__JITTER=full
export WARREN__EXECUTOR__SCHEDULED_TIMEOUT_S=120
# The retry policy decides these (never started, they would be redispatched at once otherwise).
export WARREN__EXECUTOR__MAX_REDISPATCHES=0
action="spread.$(unique_name a)"
forget_executions "$action"

exec_start ex
fake_worker w gone
heartbeat_seen "$w" "$action" "$N" 60
psql_q "insert into executions (action_ref, retry_max_attempts, retry_on)
        select '$action', 2, 'worker_lost' from generate_series(1, $N)" >/dev/null
# Dispatched to the worker, which never consumes: they expire together.
wait_until 60 "[ \"\$(psql_q \"select count(*) from execution_attempt_history a join executions e
                               on e.id = a.execution_id where e.action_ref = '$action'\")\" = $N ]"
stats=$(psql_q "select count(*) filter (where a.decision = 'retry'),
                       round(extract(epoch from max(a.ended_at) - min(a.ended_at))::numeric, 1),
                       round(extract(epoch from max(a.next_due_at) - min(a.next_due_at))::numeric, 1)
                from execution_attempt_history a join executions e on e.id = a.execution_id
                where e.action_ref = '$action'")
IFS='|' read -r retried failed_over due_over <<<"$stats"
assert_eq "$N" "$retried" "every expired dispatch was retried"
hist=$(psql_q "select string_agg(coalesce(c, 0)::text, ' ' order by b) from generate_series(0, $((BUCKETS - 1))) b
               left join (select least(width_bucket(a.delay_ms, 0, $WINDOW_MS, $BUCKETS) - 1, $((BUCKETS - 1))) as k,
                                 count(*) as c
                          from execution_attempt_history a join executions e on e.id = a.execution_id
                          where e.action_ref = '$action' group by 1) h on h.k = b")
log "histogram of retry delays, $BUCKETS buckets of $((WINDOW_MS / BUCKETS)) ms: $hist"
log "the $N attempts ended within ${failed_over} s; their retries are due over ${due_over} s"
echo "retry spread: $hist (attempts ended within ${failed_over} s, retries due over ${due_over} s)"
max=0 min=$N
for c in $hist; do
    [ "$c" -gt "$max" ] && max=$c
    [ "$c" -lt "$min" ] && min=$c
done
even=$((N / BUCKETS))
[ "$max" -le $((even * 3 / 2)) ] || fail "largest bucket $max > 1.5 x $even: $hist"
[ "$min" -ge $((even / 2)) ] || fail "smallest bucket $min < $even / 2: $hist"
# Without jitter they would all be due within the second or two their attempts ended in.
awk -v d="$due_over" 'BEGIN { exit !(d >= 15) }' || fail "retries due over only ${due_over} s"
assert_eq "$N" "$(psql_q "select count(*) from executions where action_ref = '$action'
                         and status = 'requested' and retries = 1")" "all waiting for their retry"
exec_stop "$EXEC_PID" ex
pass
