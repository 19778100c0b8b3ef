#!/usr/bin/env bash
# Operator reads never hold up the work (issue 18): with 300,000 dead-letter records, four
# clients loop on GET /api/v1/dead-letters/stats and ?q= searches for 40 s while executions are
# submitted over the API one at a time at 10/s. Submit -> completed (the row's created_at to
# ended_at) keeps its p99 within 3x of the same measure without the readers and within 250 ms,
# and every /livez answers within 100 ms throughout. The clients keep their connections alive
# (tests/lib/api_load.py): a process per request would make the harness the load.
#
# The API's read pool is one connection here (api.pool_size): on this 2-core machine two
# PostgreSQL backends busy with reads would take every core from the work, and that the pool's
# size bounds what operator reads can take from the database is the point of the lane.
# shellcheck disable=SC2154 # w is set by start_live_worker (printf -v)
export WARREN_TEST_TIMEOUT=290
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
export WARREN__LOG__LEVEL=info WARREN__API__POOL_SIZE=1
READ_S=${ISOLATION_READ_S:-40}
BASE_S=${ISOLATION_BASE_S:-20}
LOAD="python3 $WARREN_SOURCE_DIR/tests/lib/api_load.py"

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
# What autovacuum would do in the middle of the measurement otherwise.
psql_q "vacuum analyze dead_letters" >/dev/null
psql_q "vacuum analyze dead_letter_tallies" >/dev/null 2>&1 || true

exec_start ex
PORT=$(http_port ex)
start_live_worker w iso

$LOAD "$PORT" livez $((BASE_S + READ_S + 30)) >"$TEST_TMP/livez.ms" &
LIVEZ=$!
on_exit "kill $LIVEZ 2>/dev/null || true"

# p99_ms IDS_FILE: the 99th percentile of created_at -> ended_at, once all completed.
p99_ms() {
    local list
    list=$(paste -sd, "$1")
    [ -n "$list" ] || fail "no submissions in $1"
    wait_until 30 "[ \"\$(psql_q \"select count(*) from executions where id in ($list)
        and status <> 'completed'\")\" = 0 ]"
    psql_q "select round(percentile_cont(0.99) within group (order by
        extract(epoch from ended_at - created_at) * 1000))
        from executions where id in ($list)"
}

# Warm up: the lanes connect and prepare their statements on first use.
$LOAD "$PORT" submit "$w" 1 >"$TEST_TMP/warm.ids" || fail "warm-up submissions failed"
p99_ms "$TEST_TMP/warm.ids" >/dev/null
log "baseline: $BASE_S s of submissions at 10/s without readers"
$LOAD "$PORT" submit "$w" "$BASE_S" >"$TEST_TMP/base.ids" || fail "baseline submissions failed"
base=$(p99_ms "$TEST_TMP/base.ids")
log "baseline p99 submit -> completed: $base ms ($(wc -l <"$TEST_TMP/base.ids") submissions)"

log "$READ_S s of submissions at 10/s with four readers"
readers=()
for kind in stats stats searches searches; do
    $LOAD "$PORT" read "$kind" "$READ_S" >"$TEST_TMP/reads.$kind.${#readers[@]}" &
    readers+=($!)
done
$LOAD "$PORT" submit "$w" "$READ_S" >"$TEST_TMP/busy.ids" || fail "submissions with readers failed"
wait "${readers[@]}"
busy=$(p99_ms "$TEST_TMP/busy.ids")
kill "$LIVEZ" 2>/dev/null || true
wait "$LIVEZ" 2>/dev/null || true

counts=$(cat "$TEST_TMP"/reads.* | jq -s 'reduce .[] as $c ({}; . as $t | $c | to_entries |
    reduce .[] as $e ($t; .[$e.key] += $e.value))')
ok_reads=$(jq '."200" // 0' <<<"$counts")
other=$(jq '[to_entries[] | select(.key != "200" and .key != "503") | .value] | add // 0' <<<"$counts")
worst=$(sort -n "$TEST_TMP/livez.ms" | tail -n 1)
log "with readers: p99 $busy ms (baseline $base ms; $(wc -l <"$TEST_TMP/busy.ids") submissions);"\
    "reads by answer $(jq -c . <<<"$counts"); $(wc -l <"$TEST_TMP/livez.ms") /livez answers,"\
    "the slowest $worst ms"
[ "$ok_reads" -ge $((READ_S * 4)) ] ||
    fail "the readers got only $ok_reads answers in $READ_S s: reads this slow do not test isolation"
[ "$other" = 0 ] || fail "reads answered neither 200 nor 503: $counts"
[ "$(wc -l <"$TEST_TMP/busy.ids")" -ge $((READ_S * 10 - 10)) ] ||
    fail "submissions fell behind 10/s: $(wc -l <"$TEST_TMP/busy.ids") in $READ_S s"
[ "$busy" -le 250 ] || fail "p99 submit -> completed with readers is $busy ms (> 250 ms)"
[ "$busy" -le $((3 * base)) ] || fail "p99 with readers $busy ms > 3 x baseline $base ms"
[ "$worst" -le 100 ] || fail "a /livez answer took $worst ms (> 100 ms): $(sort -n "$TEST_TMP/livez.ms" | tail -n 5 | paste -sd' ')"
exec_stop "$EXEC_PID" ex
pass
