#!/usr/bin/env bash
# With queue_type = "quorum", nothing dead-lettered during a broker restart is lost (issue 7 §2,
# docs/reliability.md): 200 executions pinned to a worker that never consumes sit in its quorum
# queue (TTL 6 s, at-least-once dead-lettering) when RabbitMQ is stopped just before they expire;
# after the restart every one of them is failed "Worker queue TTL expired" with its dead-letter
# row. The scheduled timeout is 10 minutes here, so a dead letter the broker dropped would show
# as a row left scheduled, named by the failure, not as a failure with another reason.
# shellcheck disable=SC2154 # ghost is set by new_worker (printf -v)
: "${WARREN_TEST_TIMEOUT:=200}"
export WARREN_TEST_TIMEOUT
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/chaos.sh"
require_stack

N=200
export WARREN__MESSAGE_QUEUE__RABBITMQ__QUEUE_TYPE=quorum
export WARREN__EXECUTOR__SCHEDULED_TIMEOUT_S=600
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=6000 # time for the checks below
chaos_env
new_worker ghost ghost # never heartbeats, never consumes
wq="worker.$ghost.executions"

psql_q "insert into executions (action_ref, pinned_worker, params)
        select 'core.noop', '$ghost', jsonb_build_object('n', i) from generate_series(1, $N) i" >/dev/null
chaos_executor ex
EX=$BG_PID
# shellcheck disable=SC2317 # called by wait_until
confirmed() {
    [ "$(psql_q "select count(*) from executions
                 where status = 'scheduled' and dispatch_confirmed_at is not null")" = "$N" ]
}
wait_until 20 confirmed
assert_eq quorum "$(queue_json "$wq" | jq -r .type)" "the worker queue's type"
assert_eq "quorum at-least-once reject-publish" \
    "$(queue_json "$TOPO_DLQ" | jq -r '"\(.type) \(.arguments["x-dead-letter-strategy"]) \(.arguments["x-overflow"])"')" \
    "the dead-letter queue"
assert_eq "at-least-once" "$(queue_json "$wq" | jq -r '.arguments["x-dead-letter-strategy"]')" \
    "the worker queue dead-letters at least once"

# Stop the broker 0.7 s before the first dispatch's TTL runs out: the dispatches expire and are
# dead-lettered around the shutdown and the recovery of both quorum queues.
first_ms=$(psql_q "select (extract(epoch from min(scheduled_at)) * 1000)::bigint from executions")
scheduled() { psql_q "select count(*) from executions where status = 'scheduled'"; }
left_ms=$((first_ms + WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS - 700 - $(date +%s%3N)))
log "RabbitMQ restart in $left_ms ms"
[ "$left_ms" -le 0 ] || sleep "$((left_ms / 1000)).$(printf '%03d' $((left_ms % 1000)))"
log "RabbitMQ stopping; $(scheduled) dispatches not dead-lettered yet"
stack rabbit-stop >/dev/null 2>&1
log "RabbitMQ stopped; $(scheduled) dispatches not dead-lettered (recorded) yet"
stack rabbit-start >/dev/null 2>&1 || fail "RabbitMQ did not come back"

# shellcheck disable=SC2317 # called by try_until
settled() {
    [ "$(psql_q "select count(*) from executions where status = 'failed'")" = "$N" ]
}
try_until 60 settled || fail "executions not failed 60 s after the restart ($(chaos_counts)):
$(chaos_unfinished)"

chaos_none "not failed by the queue's TTL (id status error)" \
    "select id, status, error from executions where error is distinct from 'Worker queue TTL expired'"
chaos_none "no dead-letter row (id)" \
    "select id from executions e
     where not exists (select 1 from dead_letters d where d.execution_id = e.id and d.reason = 'expired')"
# At-least-once dead-lettering may deliver a dead letter twice across the restart: the second
# copy changes nothing and is kept as such (execution_terminal, closed), never as a second
# expiry of the same execution.
chaos_none "more than one expiry row (id rows)" \
    "select execution_id, count(*) from dead_letters where reason = 'expired'
     group by execution_id having count(*) > 1"
chaos_none "another row that is not a closed no-op (id reason resolution)" \
    "select id, reason, resolution from dead_letters where reason <> 'expired'
     and (reason <> 'execution_terminal' or resolution <> 'cancelled')"
log "copies dead-lettered twice: $(psql_q "select count(*) from dead_letters where reason = 'execution_terminal'")"
# (A quorum queue's counts lag behind in rabbitmqctl: waited for, not read once.)
wait_until 15 "[ \"\$(queue_counts $wq | cut -d' ' -f1,2)\" = '0 0' ]"
wait_until 15 "[ \"\$(queue_counts $TOPO_DLQ | cut -d' ' -f1,2)\" = '0 0' ]"
rc=0
bg_stop "$EX" 15 || rc=$?
assert_eq 0 "$rc" "executor exit status after SIGTERM"
stats=$(grep '"msg":"stats"' "$(bg_log ex)" | tail -n 1)
echo "quorum: $N dispatches dead-lettered across a broker restart, $N failed with a dead-letter row; duplicates $(stat_of "$stats" dead_letter_duplicates)"
pass
