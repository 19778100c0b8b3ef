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
    executor_hwm_mib b_tuned_per_s r_b_onehop r_c_onehop r_p50 r_exec_spawn \
    wal_bytes_per_execution statements_per_execution pgss_statements_per_execution b_test_per_s \
    r_b_durable_test; do
    value=$(sed -n "s/^$key=//p" "$out/run-1/results.txt")
    [[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$key has no number: '$value'"
done
summary=$(cat "$out/summary.txt")
assert_contains "$summary" "| (b) / one-hop ceiling"
# (b)'s database cost is printed under its fixed names, each with a number (durable, then under
# the test settings).
for key in wal_bytes_per_execution statements_per_execution; do
    row=$(grep "^| $key " <<<"$summary") || fail "no $key row in the summary"
    [[ $row =~ ^\|\ $key\ [^|]*\|\ [0-9]+(\.[0-9]+)?\ +\|\ [0-9]+(\.[0-9]+)?\ +\| ]] ||
        fail "the $key row has no numbers: $row"
done
row=$(grep '^| (b) durable / under the test settings' <<<"$summary") || fail "no durable / test settings row"
[[ $row =~ \|\ [0-9]+\ /\ [0-9]+\  ]] || fail "the durable / test settings row has no numbers: $row"
# The machine lines state the PostgreSQL settings: the phases ran with the durable defaults.
assert_contains "$summary" "fsync=on synchronous_commit=on full_page_writes=on"
# The bench's own PostgreSQL is gone: its directory and its processes.
pg_dir=$(sed -n "s/^bench: PostgreSQL of the bench: \(.*\)\/data on .*/\1/p" "$TEST_TMP/bench.err")
[ -n "$pg_dir" ] || fail "bench/run did not say where its PostgreSQL was"
[ ! -e "$pg_dir" ] || fail "the bench's PostgreSQL directory $pg_dir is left behind"
if pgrep -f -- "-D $pg_dir/data" >/dev/null; then fail "the bench's PostgreSQL still runs"; fi
# The executor has an API (api.listen): the batch submits are measured, not "n/a (no API)".
api_row=$(grep '^| API submit, batches of 1000' <<<"$summary") || fail "no API row in the summary"
assert_not_contains "$api_row" "n/a"
[[ $api_row =~ \|\ [0-9.]+\  ]] || fail "the API row has no ratio: $api_row"

assert_eq "$dbs_before" "$(databases)" "databases after the run"
assert_eq "$queues_before" "$(queues)" "queues after the run"
pass
