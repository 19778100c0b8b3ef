#!/usr/bin/env bash
# `warren topology verify` names each drift (queue, argument, both values; exchange type; bindings;
# missing objects) and exits 1; `declare` against a drifted queue fails readably, without a crash.
# shellcheck disable=SC2154 # w, gone are set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
require_stack

isolate_topology
export WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS=300000
run_warren declare topology declare
assert_eq 0 "$RUN_RC" "declare common topology ($RUN_ERR)"

# A worker queue made by hand with another TTL (the DLX is right, so only the TTL differs).
new_worker w drift
wq="worker.$w.executions"
mgmt_put "queues/%2F/$wq" \
    "{\"durable\":true,\"arguments\":{\"x-message-ttl\":60000,\"x-dead-letter-exchange\":\"$TOPO_DLX\"}}" >/dev/null
mgmt_post "bindings/%2F/e/$TOPO_EXCHANGE/q/$wq" "{\"routing_key\":\"execution.dispatch.worker.$w\"}" >/dev/null

run_warren verify topology verify --worker "$w" --mgmt-url "$WARREN_MGMT_URL"
assert_eq 1 "$RUN_RC" "verify exit status with drift ($RUN_OUT $RUN_ERR)"
assert_contains "$RUN_OUT" "queue '$wq' has x-message-ttl=60000 but configuration wants 300000"
assert_contains "$RUN_OUT" "1 difference between the broker and the configuration"

# WARREN_MGMT_URL is the default management URL.
run_warren verify-env topology verify --worker "$w"
assert_eq 1 "$RUN_RC" "verify with the management URL from the environment"
assert_contains "$RUN_OUT" "x-message-ttl=60000 but configuration wants 300000"

run_warren redeclare topology declare --worker "$w"
assert_eq 1 "$RUN_RC" "declare over a drifted queue ($RUN_ERR)"
assert_contains "$RUN_ERR" "queue '$wq' exists with x-message-ttl=60000 but configuration wants 300000"
assert_contains "$RUN_ERR" "see \`warren topology verify\`"
assert_eq 60000 "$(queue_json "$wq" | jq '.arguments["x-message-ttl"]')" "the queue is left as it was"

# A stray '#' binding would route every dispatch to this worker: drift.
mgmt_post "bindings/%2F/e/$TOPO_EXCHANGE/q/$wq" '{"routing_key":"#"}' >/dev/null
run_warren stray topology verify --worker "$w"
assert_contains "$RUN_OUT" "queue '$wq' has an extra binding from exchange '$TOPO_EXCHANGE' with key '#'"
assert_contains "$RUN_OUT" "2 differences"

# A missing worker queue, with and without the management API.
new_worker gone gone
run_warren missing topology verify --worker "$gone"
assert_eq 1 "$RUN_RC" "missing queue"
assert_contains "$RUN_OUT" "queue 'worker.$gone.executions' is missing: run \`warren topology declare --worker $gone\`"
WARREN_MGMT_URL='' run_warren missing-amqp topology verify --worker "$gone"
assert_eq 1 "$RUN_RC" "missing queue, passive declare only ($RUN_ERR)"
assert_contains "$RUN_OUT" "queue 'worker.$gone.executions' is missing"
assert_contains "$RUN_OUT" "note: only existence was checked"

# Without the management API the TTL drift is invisible; verify says what it could not check.
WARREN_MGMT_URL='' run_warren amqp-only topology verify --worker "$w"
assert_eq 0 "$RUN_RC" "existence-only verify ($RUN_OUT)"
assert_contains "$RUN_OUT" "queue arguments, queue and exchange types and bindings need the management API"

# The reference design's direct DLX: declare refuses to build on it, verify explains it.
isolate_topology
mgmt_put "exchanges/%2F/$TOPO_DLX" '{"type":"direct","durable":true}' >/dev/null
run_warren direct-dlx topology declare
assert_eq 1 "$RUN_RC" "declare over a direct DLX"
assert_contains "$RUN_ERR" "exchange '$TOPO_DLX' exists with type=direct but configuration wants fanout"
run_warren direct-dlx-verify topology verify
assert_eq 1 "$RUN_RC" "verify over a direct DLX"
assert_contains "$RUN_OUT" "exchange '$TOPO_DLX' has type=direct but configuration wants fanout"

# The management API unreachable or refusing: exit 1, never "matches".
run_warren mgmt-down topology verify --mgmt-url http://127.0.0.1:1
assert_eq 1 "$RUN_RC" "verify with the management API down"
assert_contains "$RUN_ERR" "cannot inspect the broker"
WARREN_MGMT_URL="http://nobody:wrongpw42@${WARREN_MGMT_URL#http://}" run_warren mgmt-auth topology verify
assert_eq 1 "$RUN_RC" "verify with wrong management credentials"
assert_contains "$RUN_ERR" "management API refused the credentials"
assert_not_contains "$RUN_ERR$RUN_OUT" "wrongpw42" "the password from WARREN_MGMT_URL in the output"

# A password on the command line would show in ps: refused before anything connects.
run_warren mgmt-argv topology verify --mgmt-url "http://nobody:hunter2@${WARREN_MGMT_URL#http://}"
assert_eq 2 "$RUN_RC" "--mgmt-url with a password"
assert_contains "$RUN_ERR" "a password on the command line is visible to every local user"
assert_contains "$RUN_ERR" "WARREN_MGMT_URL"
assert_not_contains "$RUN_ERR$RUN_OUT" "hunter2" "the password echoed"
run_warren mgmt-https topology verify --mgmt-url "https://u:hunter2@${WARREN_MGMT_URL#http://}"
assert_eq 2 "$RUN_RC" "--mgmt-url https with a password"
WARREN_MGMT_URL="https://u:hunter2@${WARREN_MGMT_URL#http://}" run_warren mgmt-https-env topology verify
assert_eq 1 "$RUN_RC" "https management URL from the environment"
assert_contains "$RUN_ERR" "must start with http://"
assert_not_contains "$RUN_ERR$RUN_OUT" "hunter2" "the password of a rejected management URL echoed"
pass
