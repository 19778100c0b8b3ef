#!/usr/bin/env bash
# Operator reads never hold up the work (issue 18): with 300,000 dead-letter records, four
# clients loop on GET /api/v1/dead-letters/stats and ?q= searches for 40 s while executions are
# submitted over the API one at a time at 10/s. Submit -> completed (the row's created_at to
# ended_at) keeps its p99 within 3x of the same measure without the readers and within 250 ms,
# and every /livez answers within 100 ms throughout.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__LOG__LEVEL=info
READ_S=${ISOLATION_READ_S:-40}
BASE_N=${ISOLATION_BASE_N:-100}

tag=$(unique_name iso)
log "loading 300000 dead-letter records (queue $tag)"
on_exit "psql_q \"delete from dead_letters where queue = '$tag'\" >/dev/null 2>&1"
psql_q "insert into dead_letters (dedup_key, reason, routing_key, exchange, queue, message_id,
        body, body_text, error, resolution, resolved_at, emitted_at, received_at)
    select '$tag-' || g, (array['expired', 'rejected', 'poison', 'worker_restarted'])[1 + g % 4],
        'execution.dispatch.worker.w' || (g % 50), 'attune.executions', '$tag', md5(g::text),
        convert_to('{\"n\":' || g || ',\"note\":\"' || md5(g::text) || '\"}', 'UTF8'),
        '{\"n\":' || g || ',\"note\":\"' || md5(g::text) || '\"}',
        'error ' || md5((g * 7)::text),
        case when g % 3 = 0 then 'pending' else 'manually_resolved' end,
        case when g % 3 = 0 then null else now() end, now(),
        now() - (g || ' seconds')::interval
    from generate_series(1, 300000) g" >/dev/null
psql_q "analyze dead_letters" >/dev/null

exec_start ex
API="http://127.0.0.1:$(http_port ex)"
start_live_worker w iso

# /livez every 100 ms for the whole test, each answer's time in ms (5000: none within 5 s).
livez_loop() {
    while :; do
        t=$(curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}' "$API/livez" ||
            echo "000 5")
        read -r code secs <<<"$t"
        [ "$code" = 200 ] || secs=5
        awk -v s="$secs" 'BEGIN { printf "%d\n", s * 1000 }'
        sleep 0.1
    done
}
livez_loop >"$TEST_TMP/livez.ms" 2>/dev/null &
LIVEZ=$!
on_exit "kill $LIVEZ 2>/dev/null || true"

# submit_paced N: N submissions of core.noop pinned to the worker, one every 100 ms; their ids.
submit_paced() {
    local i code
    for ((i = 0; i < $1; i++)); do
        code=$(curl -s -o "$TEST_TMP/sub.json" -w '%{http_code}' --max-time 5 \
            -H 'Content-Type: application/json' \
            --data "{\"action_ref\":\"core.noop\",\"worker\":\"$w\"}" "$API/api/v1/executions")
        [ "$code" = 201 ] || fail "submit answered $code: $(cat "$TEST_TMP/sub.json")"
        jq -r .id "$TEST_TMP/sub.json"
        sleep 0.1
    done
}

# p99_ms IDS: the 99th percentile of created_at -> ended_at, after all completed.
p99_ms() {
    local list
    list=$(paste -sd, <<<"$1")
    wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($list)
        and status <> 'completed'\")\" = 0 ]"
    psql_q "select round(percentile_cont(0.99) within group (order by
        extract(epoch from ended_at - created_at) * 1000))
        from executions where id in ($list)"
}

# Warm up: the lanes connect and prepare their statements on first use.
warm=$(submit_paced 10)
p99_ms "$warm" >/dev/null
log "baseline: $BASE_N submissions without readers"
base_ids=$(submit_paced "$BASE_N")
base=$(p99_ms "$base_ids")
log "baseline p99 submit -> completed: $base ms"

reader() { # KIND: stats, or searches
    local n=0 code
    while :; do
        if [ "$1" = stats ]; then
            code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$API/api/v1/dead-letters/stats")
        else
            code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
                "$API/api/v1/dead-letters?q=$(printf '%04x' $((RANDOM % 65536)))&limit=100")
        fi
        echo "$code"
        n=$((n + 1))
    done
}
readers=()
for kind in stats stats searches searches; do
    reader "$kind" >>"$TEST_TMP/reads.$kind" 2>/dev/null &
    readers+=($!)
done
on_exit "kill ${readers[*]} 2>/dev/null || true"
log "$READ_S s of submissions at 10/s with four readers"
busy_ids=$(submit_paced $((READ_S * 10)))
kill "${readers[@]}" 2>/dev/null || true
busy=$(p99_ms "$busy_ids")
kill "$LIVEZ" 2>/dev/null || true

reads=$(cat "$TEST_TMP"/reads.* | wc -l)
ok_reads=$(cat "$TEST_TMP"/reads.* | grep -c '^200$' || true)
busy_answers=$(cat "$TEST_TMP"/reads.* | grep -c '^503$' || true)
worst=$(sort -n "$TEST_TMP/livez.ms" | tail -n 1)
log "with readers: p99 $busy ms (baseline $base ms); $reads reads ($ok_reads answered 200,"\
    "$busy_answers 503); $(wc -l <"$TEST_TMP/livez.ms") /livez answers, the slowest $worst ms"
[ "$ok_reads" -ge $((READ_S * 4)) ] ||
    fail "the readers got only $ok_reads answers in $READ_S s: reads this slow do not test isolation"
bad=$(cat "$TEST_TMP"/reads.* | grep -vcE '^(200|503)$' || true)
[ "$bad" = 0 ] || fail "$bad reads answered neither 200 nor 503"
[ "$busy" -le 250 ] || fail "p99 submit -> completed with readers is $busy ms (> 250 ms)"
limit=$((3 * base))
[ "$busy" -le "$limit" ] || fail "p99 with readers $busy ms > 3 x baseline $base ms"
[ "$worst" -le 100 ] || fail "a /livez answer took $worst ms (> 100 ms): $(sort -n "$TEST_TMP/livez.ms" | tail -n 5 | paste -sd' ')"
exec_stop "$EXEC_PID" ex
pass
