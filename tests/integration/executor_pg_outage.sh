#!/usr/bin/env bash
# PostgreSQL stops while dead letters arrive: they stay unacked in the queue (nothing is lost),
# the executor retries with backoff (no hot loop: few log lines), and once PostgreSQL is back
# every one of them is stored, the expired executions are failed and the queue is empty.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
new_worker w gone
action=$(unique_name act)
forget_executions "$action"
on_exit "stack pg-start >/dev/null 2>&1"
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=3000
export WARREN__EXECUTOR__DLQ_RETRY_DELAY_MS=300
exec_start ex

ids=()
for i in 1 2 3; do ids+=("$(new_execution "$action" "$w")"); done
id_list=$(IFS=,; echo "${ids[*]}")
wait_until 10 "[ \"\$(psql_q \"select count(*) from executions where id in ($id_list) and status = 'scheduled'\")\" = 3 ]"

stack pg-stop fast
lines_before=$(wc -l <"$(bg_log ex)")
# The dispatches expire into the dead-letter queue while the database is down; poison joins them.
for i in 1 2 3 4; do
    printf 'poison %s during the outage %s' "$i" "$RANDOM" |
        amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -r "$TOPO_DLQ" -p
done
# (rabbitmqctl's "messages" counts ready and unacknowledged ones alike)
wait_until 15 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 7 ]"
sleep 3 # proves a negative (nothing is acked while the database is down): a fixed wait stays
assert_eq 7 "$(queue_messages "$TOPO_DLQ")" "all 7 kept in the queue"
kill -0 "$EXEC_PID" || fail "the executor died during the outage"
outage_lines=$(($(wc -l <"$(bg_log ex)") - lines_before))
retries=$(tail -n +"$lines_before" "$(bg_log ex)" | grep -c 'batch kept unacked' || true)
log "outage: $outage_lines log lines, $retries batch retries"
[ "$outage_lines" -lt 60 ] || fail "$outage_lines log lines during the outage: a hot loop?"
{ [ "$retries" -ge 1 ] && [ "$retries" -le 12 ]; } || fail "$retries retries: expected a backoff"
# The first retry is jittered like every backoff: into [d/2, d) of dlq_retry_delay_ms.
first=$(tail -n +"$lines_before" "$(bg_log ex)" | grep 'batch kept unacked' | head -n 1 | jq -r .retry_in_ms)
{ [ "$first" -ge 150 ] && [ "$first" -lt 300 ]; } || fail "first retry after $first ms: expected [150, 300)"

stack pg-start
wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($id_list) and status = 'failed'
    and error = 'Worker queue TTL expired'\")\" = 3 ]"
# Poison of one shape folds into one open record that counts them (schema 028).
wait_until 10 "[ \"\$(psql_q \"select coalesce(sum(occurrences), 0) from dead_letters where queue = '$TOPO_DLQ'\")\" = 4 ]"
assert_eq 3 "$(psql_q "select count(*) from dead_letters where execution_id in ($id_list) and reason = 'expired'")" \
    "one row per expired dispatch"
wait_until 5 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"

exec_stop "$EXEC_PID" ex
assert_eq "expired=3,parse_error=4" "$(stat_of "$EXEC_STATS" dead_letters | tr ',' '\n' | sort | paste -sd,)" \
    "dead letters by reason"
pass
