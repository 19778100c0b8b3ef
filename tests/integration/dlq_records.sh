#!/usr/bin/env bash
# Investigation records (schema 020, docs/dead-letters.md): every dead_letters row gets the
# issue's reason word and a snapshot on insert, rows that changed nothing are closed at once, the
# database keeps at most one pending record per execution (a second one is kept, closed, naming
# the first), and the dashboard views count and order the open ones.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

action=$(unique_name act)
tag=$(unique_name dl)
forget_executions "$action"

# dl EXECUTION_ID REASON [HEADERS]: a dead letter as the writers insert it; prints its id.
dl() {
    local id=$1 reason=$2 headers=${3:-'{}'}
    psql_q "insert into dead_letters (dedup_key, execution_id, reason, queue, headers, body, body_text)
            values ('$tag/' || gen_random_uuid(), $id, '$reason', 'worker.w.executions', '$headers',
                    convert_to('{\"n\": 1}', 'UTF8'), '{\"n\": 1}') returning id"
}

log "reason words and the snapshot"
e1=$(new_execution "$action")
psql_q "update executions set status = 'failed', worker = 'w1', attempt = 1, error = 'boom',
        outcome = '{\"stderr_tail\": \"last words\"}' where id = $e1" >/dev/null
xdeath='{"x-death": [{"queue": "worker.w1.executions", "reason": "expired", "count": 1}]}'
d1=$(dl "$e1" expired "$xdeath")
row=$(psql_q "select json_build_object('r', investigation_reason, 'res', resolution,
    'x', investigation->'x_death'->0->>'reason', 'st', investigation->'execution'->>'status',
    'a', investigation->'attempts'->-1->>'worker', 'err', investigation->'attempts'->-1->>'error',
    'tail', investigation->>'stderr_tail', 'b', investigation->>'body_base64',
    'delays', investigation->'retry_delays') from dead_letters where id = $d1")
assert_eq "worker_unavailable|pending|expired|failed|w1|boom|last words|[]" \
    "$(jq -r '"\(.r)|\(.res)|\(.x)|\(.st)|\(.a)|\(.err)|\(.tail)|\(.delays)"' <<<"$row")" "record $d1"
assert_eq '{"n": 1}' "$(jq -r .b <<<"$row" | base64 -d)" "raw body in the snapshot"

for pair in scheduled_timeout:timeout running_timeout:timeout rejected:timeout \
    worker_stale:abandoned worker_restarted:abandoned parse_error:poison_message \
    oversized:poison_message forged_identity:poison_message unprocessable_result:unprocessable_result \
    max_retries_exceeded:max_retries_exceeded staleness_timeout:staleness_timeout manual:manual; do
    assert_eq "${pair#*:}" "$(psql_q "select warren_dl_investigation_reason('${pair%%:*}')")" "$pair"
done

log "rows that changed nothing are closed on insert"
d2=$(dl "$e1" execution_terminal)
assert_eq "|cancelled|warren|t" "$(psql_q "select coalesce(investigation_reason, ''), resolution,
    resolved_by, resolved_at is not null from dead_letters where id = $d2" | tr -d '\n')" \
    "informational record"

log "one pending record per execution"
d3=$(dl "$e1" worker_stale)
assert_eq "cancelled|record $d1 is already pending for this execution" \
    "$(psql_q "select resolution, notes from dead_letters where id = $d3")" "second record kept, closed"
out=$(psql_q "update dead_letters set resolution = 'pending' where id = $d3" 2>&1) &&
    fail "a second pending record was accepted"
assert_contains "$out" "dead_letters_one_pending_idx" "the index refuses a second pending record"
psql_q "update dead_letters set resolution = 'investigating' where id = $d1" >/dev/null
d4=$(dl "$e1" worker_stale)
assert_eq "abandoned|pending" "$(psql_q "select investigation_reason, resolution from dead_letters
    where id = $d4")" "pending again once the first is being investigated"
out=$(psql_q "update dead_letters set resolution = 'bogus' where id = $d4" 2>&1) &&
    fail "an unknown resolution was accepted"
out=$(psql_q "update dead_letters set investigation_reason = 'bogus' where id = $d4" 2>&1) &&
    fail "an unknown reason word was accepted"

log "dashboard views"
e2=$(new_execution "$action")
d5=$(dl "$e2" parse_error)
psql_q "update dead_letters set received_at = now() - interval '1 hour' where id = $d4" >/dev/null
queue=$(psql_q "select string_agg(id::text, ',' order by priority desc, id)
    from dead_letter_investigation_queue where id in ($d1, $d4, $d5)")
assert_eq "$d4,$d5,$d1" "$queue" "the hour-old abandoned first, then the fresh poison, then the fresh expiry"
assert_contains "$(psql_q "select reason || '/' || resolution || '=' || count from dead_letter_counts
    where reason = 'poison_message' and resolution = 'pending'")" "poison_message/pending=" "counts view"
psql_q "delete from dead_letters where dedup_key like '$tag/%'" >/dev/null
pass
