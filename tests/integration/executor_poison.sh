#!/usr/bin/env bash
# Whatever lands in the dead-letter queue is stored and acked, never dropped and never a crash:
# non-JSON, truncated JSON, no execution_id, unknown type, invalid UTF-8, a body over
# message_queue.max_body_bytes (1 MiB: only its first 4096 bytes are kept, tests/integration/
# mq_oversized_body.sh has more) and a dispatch of an execution that does not exist. A normal dead
# letter afterwards still works.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
action=$(unique_name act)
forget_executions "$action"
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=1000

# into_dlq: publish stdin as one message straight into the dead-letter queue (default exchange).
into_dlq() {
    amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -r "$TOPO_DLQ" -p "$@"
}
tag=$RANDOM$RANDOM

# A backlog of big bodies waits before the executor starts, so it drains them in one go; they
# are handled in transactions of at most 8 MiB of bodies each. 1 MiB each: the most a consumer
# holds whole (message_queue.max_body_bytes). Ten of one shape (not JSON) fold into one open
# record that counts them, its sample the first body, whole.
run_warren declare topology declare
assert_eq 0 "$RUN_RC" "declare the topology ($RUN_ERR)"
for i in $(seq 10); do
    mark=$(printf 'big %s %s ' "$i" "$tag")
    { printf '%s' "$mark"; head -c $((1024 * 1024 - ${#mark})) /dev/zero | tr '\0' 'y'; } | into_dlq
done
exec_start ex
wait_until 20 "[ \"\$(psql_q \"select sum(occurrences) from dead_letters where queue = '$TOPO_DLQ' and body_text like 'big %'\")\" = 10 ]"
wait_until 5 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"
largest=$(grep '"msg":"batch"' "$(bg_log ex)" | jq -s --arg q "$TOPO_DLQ" '[.[] | select(.queue == $q) | .size | tonumber] | max')
[ "$largest" -le 8 ] || fail "$largest bodies of 1 MiB went into one transaction"
assert_eq "1|10|big 1 $tag" "$(psql_q "select count(*), sum(occurrences), min(substring(body_text for ${#tag} + 6))
    from dead_letters where queue = '$TOPO_DLQ' and body_text like 'big %' and length(body) = 1048576")" \
    "one record counts the ten; its sample, the first body of 1 MiB, kept whole"
psql_q "delete from dead_letters where queue = '$TOPO_DLQ' and body_text like 'big %'" >/dev/null

printf 'not json at all %s' "$tag" | into_dlq
printf '{"message_id": "m-%s", "message_type": "ExecutionRequested", "payload": {"execution_' "$tag" | into_dlq
envelope ExecutionRequested "{\"worker_id\": \"w\", \"action_ref\": \"a\", \"tag\": \"$tag\"}" | into_dlq
envelope SomethingElse "{\"execution_id\": 1, \"tag\": \"$tag\"}" | into_dlq
printf '\xff\xfe{"bad": "%s\xc3\x28"}' "$tag" | into_dlq -H "x-note: invalid utf-8"
{ printf '%s' "$tag"; head -c $((1024 * 1024)) /dev/zero | tr '\0' 'x'; } | into_dlq
envelope ExecutionRequested "{\"execution_id\": 999999999999, \"worker_id\": \"w\", \"action_ref\": \"a\", \"tag\": \"$tag\"}" | into_dlq

wait_until 20 "[ \"\$(psql_q \"select count(*) from dead_letters where queue = '$TOPO_DLQ'\")\" = 7 ]"
assert_eq "execution_missing=1,missing_execution_id=1,oversized=1,parse_error=3,unknown_type=1" \
    "$(psql_q "select string_agg(reason || '=' || n, ',' order by reason) from
        (select reason, count(*) n from dead_letters where queue = '$TOPO_DLQ' group by reason) r")" \
    "rows by reason"
wait_until 5 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"

# The bytes are kept exactly; text only where it is text.
assert_eq "t|fffe" "$(psql_q "select body_text is null, encode(substring(body from 1 for 2), 'hex')
    from dead_letters where queue = '$TOPO_DLQ' and body_text is null")" "invalid UTF-8 kept raw"
assert_eq "invalid utf-8" "$(psql_q "select headers->>'x-note' from dead_letters
    where queue = '$TOPO_DLQ' and body_text is null")" "headers kept"
assert_eq "4096|$tag|body of $((1024 * 1024 + ${#tag})) bytes exceeds message_queue.max_body_bytes (1048576); only its first 4096 bytes were kept" \
    "$(psql_q "select length(body), substring(body_text for ${#tag}), error from dead_letters
        where queue = '$TOPO_DLQ' and reason = 'oversized'")" "the body over 1 MiB by its first bytes"
assert_eq "999999999999|does not exist" "$(psql_q "select execution_id, substring(error from 'does not exist')
    from dead_letters where queue = '$TOPO_DLQ' and reason = 'execution_missing'")" "missing execution"
assert_contains "$(psql_q "select error from dead_letters where queue = '$TOPO_DLQ' and reason = 'parse_error'
    and body_text like '{\"message_id\": \"m-$tag%'")" "truncated" "truncated JSON explained"

# A redelivery of an already stored dead letter adds no row (a dispatch of an execution that
# ended: a record of its own, not one that folds).
ended=$(new_execution "$action")
psql_q "update executions set status = 'cancelled' where id = $ended" >/dev/null
envelope ExecutionRequested "{\"execution_id\": $ended, \"worker_id\": \"w\", \"action_ref\": \"a\"}" >"$TEST_TMP/dup.json"
into_dlq <"$TEST_TMP/dup.json"
into_dlq <"$TEST_TMP/dup.json"
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where queue = '$TOPO_DLQ'\")\" = 8 ]"
wait_until 5 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"

# A record the database refuses (here: a constraint the test adds for one header) sinks only
# itself: the batch is retried one message at a time, and the refused one is stored raw as
# store_error, without headers. Both are acked.
constraint="refuse_$RANDOM"
psql_q "alter table dead_letters add constraint $constraint check (not headers ? 'x-refuse') not valid" >/dev/null
on_exit "psql_q 'alter table dead_letters drop constraint if exists $constraint' >/dev/null 2>&1"
{ printf 'refused %s' "$tag" | into_dlq -H "x-refuse: yes"
  printf 'accepted %s' "$tag" | into_dlq; }
wait_until 10 "[ \"\$(psql_q \"select count(*) from dead_letters where queue = '$TOPO_DLQ'\")\" = 10 ]"
assert_eq "parse_error:accepted|store_error:refused" \
    "$(psql_q "select string_agg(reason || ':' || split_part(body_text, ' ', 1), '|' order by reason)
        from dead_letters where queue = '$TOPO_DLQ' and body_text ~ '^(refused|accepted) $tag'")" \
    "the refused record stored raw, the other as usual"
assert_eq "{}" "$(psql_q "select headers from dead_letters where queue = '$TOPO_DLQ' and reason = 'store_error'")"
wait_until 5 "[ \"\$(queue_messages '$TOPO_DLQ')\" = 0 ]"
psql_q "alter table dead_letters drop constraint $constraint" >/dev/null

# Still healthy: a real expiry is handled as usual.
new_worker w gone
id=$(new_execution "$action" "$w")
wait_until 10 "[ \"\$(exec_field $id status)\" = failed ]"
assert_eq "Worker queue TTL expired" "$(exec_field "$id" error)" "normal dead letter after the poison"

exec_stop "$EXEC_PID" ex
assert_eq 1 "$(stat_of "$EXEC_STATS" dead_letter_duplicates)" "the duplicate was counted"
assert_eq "parse_error=14,missing_execution_id=1,unknown_type=1,oversized=1,execution_missing=1,execution_terminal=1,store_error=1,expired=1" \
    "$(stat_of "$EXEC_STATS" dead_letters)" "dead letters by reason"
pass
