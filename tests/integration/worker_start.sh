#!/usr/bin/env bash
# `warren worker` start-up errors: an invalid worker id exits 2 naming the rule; a worker queue
# declared with other arguments exits 1 naming the fix; a handlers directory others can write
# exits 1 naming the fix; --help works without a broker.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

run_warren help worker --help
assert_eq 0 "$RUN_RC" "--help"
assert_contains "$RUN_OUT" "usage: warren worker"

for bad in 'bad name' '.dot' 'a..b' 'trailing.' "$(printf 'x%.0s' {1..65})"; do
    run_warren badname worker --name "$bad"
    assert_eq 2 "$RUN_RC" "invalid id '$bad'"
    assert_contains "$RUN_ERR" "invalid worker id '$bad' (from --name)"
done
WARREN_WORKER_NAME='no/slash' run_warren badenv worker
assert_eq 2 "$RUN_RC" "invalid id from the environment"
assert_contains "$RUN_ERR" "(from WARREN_WORKER_NAME)"
WARREN__WORKER__NAME='x y' WARREN_WORKER_NAME=ignored run_warren badcfg worker
assert_eq 2 "$RUN_RC" "worker.name wins over WARREN_WORKER_NAME"
assert_contains "$RUN_ERR" "'x y' (from worker.name)"

# The queue exists with another TTL: RabbitMQ refuses the declaration (406); the worker exits 1
# and says what to do.
new_worker w drift
declare_queue "worker.$w.executions" '{"x-message-ttl": 1234}'
rc=0
timeout 30 "$WARREN_BIN" worker --name "$w" >"$TEST_TMP/drift.out" 2>&1 || rc=$?
assert_eq 1 "$rc" "exit status after a 406"
out=$(cat "$TEST_TMP/drift.out")
assert_contains "$out" "the broker refused the worker's topology"
assert_contains "$out" "x-message-ttl=1234 but configuration wants 300000"
assert_contains "$out" "drain and delete the queue"

# Anyone who can add a file to the handlers directory could make the worker run it.
mkdir -m 0777 "$TEST_TMP/open"
chmod 0777 "$TEST_TMP/open" # whatever the umask
rc=0
WARREN__WORKER__HANDLERS_DIR="$TEST_TMP/open" timeout 30 "$WARREN_BIN" worker --name "$w" \
    >"$TEST_TMP/open.out" 2>&1 || rc=$?
assert_eq 1 "$rc" "exit status with a world-writable handlers_dir"
assert_contains "$(cat "$TEST_TMP/open.out")" "handlers_dir $TEST_TMP/open is writable by its group or others (mode 777)"
assert_contains "$(cat "$TEST_TMP/open.out")" "chmod go-w"
pass
