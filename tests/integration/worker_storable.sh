#!/usr/bin/env bash
# The worker never sends what the executor cannot store: a result with a number outside jsonb's
# range goes as text marked "unstorable", and an error text cut to fit stays valid UTF-8. Each
# completion body, as sent, is stored as jsonb by the stack's PostgreSQL.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

# A handlers directory whose path is long and not ASCII: an error naming it must be cut (it is
# longer than an error buffer), at a character boundary. "a" makes the cut fall inside an "é".
part=$(printf 'é%.0s' $(seq 1 125))
hdir="$TEST_TMP/a/$part/$part"
mkdir -p "$hdir"
printf '#!/bin/sh\nprintf %s\n' "'{\"x\": 1e999999, \"ok\": 1e131071}'" >"$hdir/t.bignum"
printf '#!/bin/sh\nprintf %s\n' "'[1, 0.5e-16383]'" >"$hdir/t.tiny"
chmod 755 "$hdir"/t.*
export WARREN__WORKER__HANDLERS_DIR=$hdir

new_worker w storable
start_worker worker "$w"

# stored BODY_JSON: PostgreSQL's jsonb takes the whole body as it was sent.
stored() {
    local out
    out=$(psql_q "select jsonb_typeof(\$body\$$1\$body\$::jsonb)" 2>&1) || fail "jsonb refused the body: $out"
    assert_eq object "$out" "body stored as jsonb"
}

id=$(exec_id)
publish_dispatch "$w" "$(dispatch_body "$id" "$w" t.bignum '{}')"
m=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")")
assert_eq completed "$(jq -r .body.payload.status <<<"$m")" "status"
assert_contains "$(jq -r .raw <<<"$m")" \
    '"result":{"output":"{\"x\": 1e999999, \"ok\": 1e131071}","unstorable":"number out of range"}' \
    "the result travels as text, marked"
stored "$(jq -r .raw <<<"$m")"

publish_dispatch "$w" "$(dispatch_body "$((id + 1))" "$w" t.tiny '{}')"
m=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 1))")")
assert_contains "$(jq -r .raw <<<"$m")" '"unstorable":"number out of range"' "16384 digits of scale"
stored "$(jq -r .raw <<<"$m")"

publish_dispatch "$w" "$(dispatch_body "$((id + 2))" "$w" no.such '{}')"
m=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 2))")")
assert_eq string "$(jq -r .encoding <<<"$m")" "the completion body is UTF-8"
assert_contains "$(jq -r .body.payload.error <<<"$m")" "no handler for action 'no.such'"
stored "$(jq -r .raw <<<"$m")"

stop_worker worker "$BG_PID"
pass
