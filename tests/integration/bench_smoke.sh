#!/usr/bin/env bash
# bench/run --smoke measures every figure of the targets table end to end and leaves no
# database, queue or process behind.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

databases() { psql_q "SELECT string_agg(datname, ' ' ORDER BY datname) FROM pg_database"; }
queues() { rmq list_queues -s name | sort | tr '\n' ' '; }
# The shared queues (results, heartbeats, dead letters) are the stack's, declared by any
# executor: make sure they exist first, so a fresh stack does not count them as left behind.
"$WARREN_BIN" topology declare >/dev/null
dbs_before=$(databases)
queues_before=$(queues)

out=$TEST_TMP/bench
on_fail tail -n 40 "$TEST_TMP/bench.err"
WARREN_BUILD_DIR=$WARREN_BUILD_DIR BENCH_OUT=$out bash "$WARREN_SOURCE_DIR/bench/run" --smoke \
    >"$TEST_TMP/bench.out" 2>"$TEST_TMP/bench.err" || fail "bench/run --smoke failed"

# Every figure a target needs has a number (Celery and the API are not part of the smoke run).
for key in onehop_per_s broker_serial_per_s onehop_p50_ms b_per_s c_steady_per_s warren_p50_ms \
    warren_p99_ms exec_per_s spawn_per_s worker_rss_start_mib worker_rss_after_mib \
    executor_hwm_mib b_tuned_per_s r_b_onehop r_c_onehop r_p50 r_exec_spawn; do
    value=$(sed -n "s/^$key=//p" "$out/run-1/results.txt")
    [[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$key has no number: '$value'"
done
summary=$(cat "$out/summary.txt")
assert_contains "$summary" "| (b) / one-hop ceiling"
# The executor has an API (api.listen): the batch submits are measured, not "n/a (no API)".
api_row=$(grep '^| API submit, batches of 1000' <<<"$summary") || fail "no API row in the summary"
assert_not_contains "$api_row" "n/a"
[[ $api_row =~ \|\ [0-9.]+\  ]] || fail "the API row has no ratio: $api_row"

assert_eq "$dbs_before" "$(databases)" "databases after the run"
assert_eq "$queues_before" "$(queues)" "queues after the run"
pass
