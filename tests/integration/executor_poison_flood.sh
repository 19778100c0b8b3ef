#!/usr/bin/env bash
# A junk flood is contained: thousands of unusable messages waiting in the results queue fold
# into a handful of open records that count them all (occurrences), with a handful of log lines;
# a real completion sent behind them is applied within 1.5 s; a bulk resolve closes the
# records, and the next junk message opens a new one: the 20,000-message burst of issue 19
# (FLOOD_HALF=1500 makes it a quick 3,000).
# shellcheck disable=SC2154 # w is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mq_probe.sh"
require_stack
require_mq_probe

isolate_topology
fake_worker w flood
action=$(unique_name act)
forget_executions "$action"
api_start ex
heartbeat_seen "$w" "$action"
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
report "$w" "$id" 1 running
wait_until 10 "[ \"\$(exec_field $id status)\" = running ]"

HALF=${FLOOD_HALF:-10000}
# Measured 0.65-0.87 s on the two-core test machine when this test was written (prefetch 256),
# 0.8-1.11 s on the same shared machine later with nothing in the path changed: 1.5 s, still far
# below the many seconds of a completion starved behind the flood. Under AddressSanitizer (the
# sanitize run sets ASAN_OPTIONS) every process is two to three times slower: 4 s.
LIMIT_S=1.5
[ -z "${ASAN_OPTIONS:-}" ] || LIMIT_S=4
junk() { # N ID_PREFIX BODY: N junk messages in confirmed batches
    "$PROBE" publish -n "$1" -b 250 -I "$2" -B "$3" "$TOPO_EXCHANGE:execution.completed.$w" \
        >"$TEST_TMP/probe.$2.out" || fail "publishing junk: $(tail -3 "$TEST_TMP/probe.$2.out")"
}
log "$((2 * HALF)) junk messages wait in the results queue; a real completion comes behind them"
exec_stop "$EXEC_PID" ex
junk "$HALF" "a$RANDOM-" 'junk { not json'
junk "$((HALF - 500))" "b$RANDOM-" "$(envelope WorkerHeartbeat '{"worker_id": "x"}')"
junk 500 "c$RANDOM-" "$(envelope ExecutionCompleted '{"status": "completed"}' 1)"
api_start ex2
t0=$(date +%s.%N)
report "$w" "$id" 1 completed '{"real": true}'
wait_until 10 "[ \"\$(exec_field $id status)\" = completed ]"
latency=$(psql_q "select round((extract(epoch from ended_at) - $t0)::numeric, 3) from executions where id = $id")
log "the completion was applied $latency s after it was sent"
[ "$(echo "$latency < $LIMIT_S" | bc)" = 1 ] ||
    fail "the completion took $latency s (more than $LIMIT_S s) behind the junk"
open_q="from dead_letters where queue = '$TOPO_RESULTS' and resolution in ('pending', 'investigating')"
assert_eq "$((2 * HALF))|t" "$(psql_q "select sum(occurrences),
    max(coalesce(last_seen_at, received_at)) <= (select ended_at from executions where id = $id) $open_q")" \
    "every junk message was handled before the completion, which came behind them all"
assert_eq '{"real": true}' "$(exec_field "$id" result)" "the real completion"

wait_until 30 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ]"
assert_eq "3|$((2 * HALF))" "$(psql_q "select count(*), sum(occurrences) $open_q")" \
    "three shapes (parse_error, unknown_type, missing_execution_id): three open records count them all"
assert_eq "missing_execution_id:500,parse_error:$HALF,unknown_type:$((HALF - 500))" \
    "$(psql_q "select string_agg(reason || ':' || occurrences, ',' order by reason) $open_q")" "by reason"
assert_eq "t|t" "$(psql_q "select bool_and(last_seen_at >= received_at), bool_and(body_text is not null) $open_q")" \
    "each keeps its first message as a sample and when the last came"
lines=$(grep -c "unreadable result message stored as a dead letter" "$(bg_log ex2)")
log "$lines log lines for $((2 * HALF)) junk messages"
[ "$lines" -lt $((2 * HALF / 10)) ] || fail "$lines log lines for the junk: one per message is what folding avoids"
folded=$(curl -sS "$API/metrics" | awk '$1 == "warren_dead_letters_folded_total" { print $2 }')
assert_eq "$((2 * HALF - 3))" "$folded" "warren_dead_letters_folded_total"

log "bulk resolve closes them; the next junk opens a new record"
expect 200 POST /api/v1/dead-letters/resolve \
    "{\"filter\": {\"queue\": \"$TOPO_RESULTS\"}, \"resolution\": \"cancelled\", \"notes\": \"flood\", \"expected_count\": 3}"
assert_eq "3|3" "$(jq -r '"\(.matched)|\(.resolved)"' <<<"$CALL_BODY")" "resolved"
assert_eq 0 "$(psql_q "select count(*) $open_q")" "no open record left"
junk 1 "d$RANDOM-" 'junk { again'
wait_until 10 "[ \"\$(psql_q \"select count(*) $open_q\")\" = 1 ]"
assert_eq "parse_error|1" "$(psql_q "select reason, occurrences $open_q")" "a new record after the resolve"
pass
