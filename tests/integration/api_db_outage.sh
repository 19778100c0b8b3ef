#!/usr/bin/env bash
# PostgreSQL stops under a running API: every endpoint that needs the database answers 503 with
# a Retry-After header and the JSON error, /readyz is 503 and says why, /livez and /metrics stay
# 200; once PostgreSQL is back the same requests succeed without restarting the executor.
# Stops and starts the stack's PostgreSQL: not to be run beside other tests.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
action=$(unique_name act)
forget_executions "$action"
on_exit "stack pg-start >/dev/null 2>&1"
api_start ex
submit="{\"action_ref\":\"$action\"}"
expect 201 POST /api/v1/executions "$submit"
id=$(jq -r .id <<<"$CALL_BODY")

# code_of URL: the status of a GET that needs no key.
code_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$API$1" || true; }

log "database stopped: 503 with Retry-After from the API, /readyz 503, /livez 200"
stack pg-stop fast
for req in "POST /api/v1/executions $submit" "GET /api/v1/executions/$id" \
    "GET /api/v1/executions?limit=5" "GET /api/v1/workers" "POST /api/v1/executions/$id/cancel"; do
    read -r method path body <<<"$req"
    curl -sS --max-time 20 -D "$TEST_TMP/headers" -o "$TEST_TMP/body" -w '%{http_code}' \
        -X "$method" -H "Authorization: Bearer $API_WRITE_KEY" \
        ${body:+-H "Content-Type: application/json" --data-binary "$body"} \
        "$API$path" >"$TEST_TMP/code"
    assert_eq 503 "$(cat "$TEST_TMP/code")" "$method $path while the database is down"
    retry=$(tr -d '\r' <"$TEST_TMP/headers" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')
    [[ $retry =~ ^[1-9][0-9]*$ ]] || fail "$method $path: Retry-After '$retry' is not whole seconds"
    assert_eq database_unavailable "$(jq -r .error "$TEST_TMP/body")" "$method $path error"
done
assert_eq 503 "$(code_of /readyz)" "readyz while the database is down"
curl -s --max-time 5 "$API/readyz" | jq -e '.checks.database == "unreachable" and
    (.reasons | index("database unreachable"))' >/dev/null || fail "readyz does not say why"
assert_eq 200 "$(code_of /livez)" "livez while the database is down"
assert_eq 200 "$(code_of /metrics)" "metrics while the database is down"

log "database back: the same requests succeed"
stack pg-start
wait_until 30 "[ \"\$(code_of /readyz)\" = 200 ]"
expect 201 POST /api/v1/executions "$submit"
expect 200 GET "/api/v1/executions/$id" '' "$API_READ_KEY"
assert_eq 2 "$(psql_q "select count(*) from executions where action_ref = '$action'")" \
    "one submitted before the outage, one after; none during it"
exec_stop "$EXEC_PID" ex
pass
