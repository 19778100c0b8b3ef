#!/usr/bin/env bash
# /metrics of the executor and of a worker, after real executions, pass `promtool check metrics`
# and carry the metrics docs/metrics.md promises, the status changes among them; the example
# alerting rules pass `promtool check rules`.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
command -v promtool >/dev/null || fail "promtool missing: scripts/deps installs prometheus"

worker_env
export WARREN__WORKER__HTTP_LISTEN=127.0.0.1:0
exec_start ex
new_worker w mw
start_worker wk "$w"
E="http://127.0.0.1:$(http_port ex)"
W="http://127.0.0.1:$(http_port wk health)"
forget_executions core.
ids=()
for a in core.echo core.fail core.echo; do
    ids+=("$(psql_q "insert into executions (action_ref, pinned_worker) values ('$a', '$w') returning id")")
done
for id in "${ids[@]}"; do
    wait_until 20 "case \$(exec_field $id status) in completed|failed) true;; *) false;; esac"
done

curl -sS -f "$E/metrics" >"$TEST_TMP/executor.prom"
curl -sS -f "$W/metrics" >"$TEST_TMP/worker.prom"
promtool check metrics <"$TEST_TMP/executor.prom" || fail "promtool: executor /metrics"
promtool check metrics <"$TEST_TMP/worker.prom" || fail "promtool: worker /metrics"
promtool check rules "$WARREN_SOURCE_DIR/docs/metrics/alerts.yml" || fail "promtool: alerting rules"

# Every family docs/metrics.md lists for a daemon is served by it.
# shellcheck disable=SC2016,SC2013 # the backquotes of docs/metrics.md's table; a name is a word
for f in $(sed -n 's/^| `\(warren_[a-z_]*\)` | executor .*/\1/p' "$WARREN_SOURCE_DIR/docs/metrics.md"); do
    grep -q "^# TYPE $f " "$TEST_TMP/executor.prom" || fail "executor /metrics lacks $f"
done
# shellcheck disable=SC2016,SC2013 # the backquotes of docs/metrics.md's table; a name is a word
for f in $(sed -n 's/^| `\(warren_[a-z_]*\)` | worker .*/\1/p' "$WARREN_SOURCE_DIR/docs/metrics.md"); do
    grep -q "^# TYPE $f " "$TEST_TMP/worker.prom" || fail "worker /metrics lacks $f"
done

val() { awk -v m="$2" '$1 == m { print $2 }' "$TEST_TMP/$1.prom"; }
assert_eq 2 "$(val worker 'warren_worker_executions_total{outcome="completed"}')" "worker completions"
assert_eq 1 "$(val worker 'warren_worker_executions_total{outcome="failed"}')" "worker failures"
assert_eq 2 "$(val worker 'warren_handler_duration_seconds_count{action="core.echo"}')" "durations by action"
assert_eq 3 "$(val executor 'warren_dispatches_total{result="confirmed"}')" "dispatches"
assert_eq 3 "$(val executor 'warren_dispatch_confirms_total{outcome="acked"}')" "confirms"
assert_eq 3 "$(val executor warren_execution_run_seconds_count)" "run times observed"
grep -qE '[{,]execution_id=' "$TEST_TMP/executor.prom" "$TEST_TMP/worker.prom" && fail "an execution id as a label"

# Status changes from the history, counted once they are 10 s old (a refresh every 10 s).
# shellcheck disable=SC2317 # called by wait_until
transitions() {
    curl -sS -f "$E/metrics" >"$TEST_TMP/executor.prom"
    [ "$(val executor 'warren_execution_transitions_total{from="running",to="completed"}')" = 2 ] &&
        [ "$(val executor 'warren_execution_transitions_total{from="running",to="failed"}')" = 1 ]
}
wait_until 40 transitions
assert_eq 3 "$(val executor 'warren_execution_transitions_total{from="none",to="requested"}')" "created"
assert_eq 3 "$(val executor 'warren_execution_transitions_total{from="scheduled",to="running"}')" "started"
promtool check metrics <"$TEST_TMP/executor.prom" || fail "promtool: executor /metrics with transitions"
pass
