#!/usr/bin/env bash
# Bulk resolve (docs/dead-letters.md): junk on the results queue becomes open records, which
# POST /api/v1/dead-letters/resolve and `warren dlq resolve --filter` (over the API and on the
# database URL) close in one step, only when expected_count matches, with who did it and when;
# closed records and records outside the filter are left alone; bad input is a 400.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
new_worker w bulk
api_start ex

# Open records on this test's own results and heartbeats queues; a distinct body each.
junk() { # QUEUE_KEY N
    for i in $(seq 1 "$2"); do publish "$TOPO_EXCHANGE" "$1" "junk $i { $RANDOM"; done
}
junk "execution.completed.$w" 5
junk "worker.heartbeat.$w" 2
open_on() { psql_q "select count(*) from dead_letters where queue = '$1' and resolution in ('pending', 'investigating')"; }
wait_until 15 "[ \"\$(queue_messages '$TOPO_RESULTS')\" = 0 ] && [ \"\$(queue_messages '$TOPO_HEARTBEATS')\" = 0 ]"
wait_until 5 "[ \"\$(open_on '$TOPO_RESULTS')\" -ge 1 ] && [ \"\$(open_on '$TOPO_HEARTBEATS')\" -ge 1 ]"
results_open=$(open_on "$TOPO_RESULTS")
beats_open=$(open_on "$TOPO_HEARTBEATS")
assert_eq "true|true" "$([ "$results_open" -ge 1 ] && echo true)|$([ "$beats_open" -ge 1 ] && echo true)" \
    "open records on both queues ($results_open, $beats_open)"
one=$(psql_q "select min(id) from dead_letters where queue = '$TOPO_RESULTS'")
expect 200 PATCH "/api/v1/dead-letters/$one" '{"resolution": "investigating"}'

log "the API: dry run, a wrong count, bad input, then the real thing"
filter="{\"queue\": \"$TOPO_RESULTS\"}"
expect 200 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\", \"dry_run\": true}"
assert_eq "$results_open|0|true" "$(jq -r '"\(.matched)|\(.resolved)|\(.dry_run)"' <<<"$CALL_BODY")" "dry run"
expect 409 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\", \"expected_count\": $((results_open + 1))}"
assert_contains "$CALL_BODY" "but $results_open open records match: nothing resolved" "a wrong count"
assert_eq "$results_open" "$(open_on "$TOPO_RESULTS")" "a wrong count changes nothing"
expect 400 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"pending\", \"expected_count\": 1}"
assert_contains "$CALL_BODY" "a bulk resolve closes records" "resolving to an open resolution"
expect 400 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"expected_count\": 1}"
expect 400 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\"}"
assert_contains "$CALL_BODY" "give expected_count" "no count"
expect 400 POST /api/v1/dead-letters/resolve "{\"filter\": {\"resolution\": \"cancelled\"}, \"resolution\": \"cancelled\", \"dry_run\": true}"
assert_contains "$CALL_BODY" "resolve closes open records only, never cancelled ones" "a filter on closed records"
expect 400 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\", \"dry_run\": true, \"force\": true}"
expect 401 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\", \"dry_run\": true}" -
expect 403 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\", \"dry_run\": true}" "$API_READ_KEY"
expect 200 POST /api/v1/dead-letters/resolve \
    "{\"filter\": $filter, \"resolution\": \"cancelled\", \"notes\": \"junk flood\", \"expected_count\": $results_open}"
assert_eq "$results_open|$results_open|cancelled|false" \
    "$(jq -r '"\(.matched)|\(.resolved)|\(.resolution)|\(.dry_run)"' <<<"$CALL_BODY")" "resolved"
assert_eq "0" "$(open_on "$TOPO_RESULTS")" "no open record left on the queue"
assert_eq "$results_open|ops|resolved in bulk by ops: junk flood|t" \
    "$(psql_q "select count(*), min(resolved_by), min(notes), bool_and(resolved_at is not null)
               from dead_letters where queue = '$TOPO_RESULTS' and notes like 'resolved in bulk%'")" \
    "who, why and when, on every record (the investigating one too)"
assert_eq "$beats_open" "$(open_on "$TOPO_HEARTBEATS")" "records outside the filter are left alone"
expect 200 POST /api/v1/dead-letters/resolve "{\"filter\": $filter, \"resolution\": \"cancelled\", \"expected_count\": 0}"
assert_eq "0|0" "$(jq -r '"\(.matched)|\(.resolved)"' <<<"$CALL_BODY")" "closed records are not matched again"

log "warren dlq resolve --filter, over the API and on the database URL"
rc=0
out=$("$WARREN_BIN" dlq resolve --filter --queue "$TOPO_HEARTBEATS" --resolution cancelled 2>&1) || rc=$?
assert_eq 2 "$rc" "no count is a usage error: $out"
rc=0
out=$("$WARREN_BIN" dlq resolve --filter --queue "$TOPO_HEARTBEATS" --resolution investigating --dry-run 2>&1) || rc=$?
assert_eq 2 "$rc" "an open resolution is a usage error: $out"
out=$(WARREN_API_URL=$API WARREN_API_KEY=$API_WRITE_KEY "$WARREN_BIN" dlq resolve --filter \
    --queue "$TOPO_HEARTBEATS" --resolution permanent_failure --dry-run --json)
assert_eq "$beats_open|0" "$(jq -r '"\(.matched)|\(.resolved)"' <<<"$out")" "dry run over the API"
rc=0
out=$(env -u WARREN_API_URL "$WARREN_BIN" dlq resolve --filter --queue "$TOPO_HEARTBEATS" \
    --resolution permanent_failure --expected-count 999 2>&1) || rc=$?
assert_eq 1 "$rc" "a wrong count fails on the database URL: $out"
assert_contains "$out" "but $beats_open open records match" "and says how many"
out=$(env -u WARREN_API_URL "$WARREN_BIN" dlq resolve --filter --queue "$TOPO_HEARTBEATS" \
    --resolution permanent_failure --notes "bad heartbeats" --expected-count "$beats_open")
assert_eq "$beats_open open record(s) match; $beats_open resolved as permanent_failure" "$out" "on the database URL"
assert_eq "0|$beats_open|cli:$(id -un)|resolved in bulk by cli:$(id -un): bad heartbeats" \
    "$(psql_q "select count(*) filter (where resolution in ('pending', 'investigating')),
               count(*) filter (where resolution = 'permanent_failure'), max(resolved_by), max(notes)
               from dead_letters where queue = '$TOPO_HEARTBEATS'")" "closed by the operator"
pass
