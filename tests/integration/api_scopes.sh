#!/usr/bin/env bash
# Every route of /api/v1 with a key of every scope (read, submit, operate, admin, and the
# deprecated write): 403 below the route's scope, and past the authorization at or above it (the
# requests name rows that do not exist, carry an empty body or a field the route does not take,
# so they end in 400, 404 or 409 and change nothing); 401 without a key. A write key works as operate, with a warning naming
# it at start and at a reload.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack
isolate_topology

declare -A SECRET LEVEL=([read]=1 [submit]=2 [operate]=3 [admin]=4 [write]=3)
k=$(unique_name k) # the keys' names: k-...-read and so on, this run's own
keys="$TEST_TMP/scoped.keys"
: >"$keys"
chmod 600 "$keys"
for scope in read submit operate admin write; do
    SECRET[$scope]="$scope-key-$RANDOM$RANDOM-0123456789"
    printf '%s-%s %s %s\n' "$k" "$scope" "$scope" "${SECRET[$scope]}" >>"$keys"
done
export WARREN__API__KEYS_FILE=$keys WARREN__API__AUTH_READS=true WARREN__LOG__FORMAT=json
exec_start ex
API="http://127.0.0.1:$(http_port ex)"
wait_log ex "\"msg\":\"API key scope .write. is deprecated.*\"key\":\"$k-write\"" 5

no=999999999999 # an id no row has
# METHOD PATH BODY SCOPE: the route and the scope it needs.
routes=(
    "GET|/api/v1/executions||read"
    "GET|/api/v1/executions/$no||read"
    "GET|/api/v1/workers||read"
    "GET|/api/v1/dead-letters||read"
    "GET|/api/v1/dead-letters/stats||read"
    "GET|/api/v1/dead-letters/investigation-queue||read"
    "GET|/api/v1/dead-letters/$no||read"
    "GET|/api/v1/staleness||read"
    "GET|/api/v1/redrive-tasks||read"
    "GET|/api/v1/redrive-tasks/$no||read"
    "GET|/api/v1/redrive-tasks/$no/items||read"
    "GET|/api/v1/actions||read"
    "POST|/api/v1/executions|{}|submit"
    "POST|/api/v1/executions/$no/cancel||operate"
    "POST|/api/v1/executions/$no/retry||operate"
    "POST|/api/v1/executions/$no/investigate|{}|operate"
    "POST|/api/v1/executions/$no/complete|{}|operate"
    "PATCH|/api/v1/dead-letters/$no|{}|operate"
    "POST|/api/v1/dead-letters/$no/redrive|{}|operate"
    "POST|/api/v1/dead-letters/purge|{}|admin"
    "POST|/api/v1/dead-letters/resolve|{}|admin"
    "POST|/api/v1/redrive-tasks|{}|admin"
    "POST|/api/v1/redrive-tasks/$no/cancel||admin"
    "POST|/api/v1/redrive-tasks/$no/resume||admin"
    "POST|/api/v1/actions/scope.none/pause|{\"x\": 1}|admin"
    "POST|/api/v1/actions/scope.none/resume|{\"x\": 1}|admin"
)
# What these keys changed: rows that name them.
changed() {
    psql_q "select (select count(*) from executions where '$k' in (left(submitted_by, ${#k}),
                left(cancelled_by, ${#k}), left(completed_by, ${#k})))
        || '|' || (select count(*) from dead_letters where left(resolved_by, ${#k}) = '$k')
        || '|' || (select count(*) from redrive_tasks where left(created_by, ${#k}) = '$k')"
}
tried=0
for route in "${routes[@]}"; do
    IFS='|' read -r method path body need <<<"$route"
    got=$(call "$method" "$path" "$body" -)
    assert_eq 401 "${got%% *}" "$method $path without a key"
    for scope in read submit operate admin write; do
        got=$(call "$method" "$path" "$body" "${SECRET[$scope]}")
        code=${got%% *}
        if [ "${LEVEL[$scope]}" -lt "${LEVEL[$need]}" ]; then
            assert_eq 403 "$code" "$method $path with a $scope key (needs $need): ${got:0:200}"
        elif [ "$code" = 401 ] || [ "$code" = 403 ] || [ "$code" = 000 ]; then
            fail "$method $path with a $scope key (needs $need) was refused: ${got:0:300}"
        fi
        tried=$((tried + 1))
    done
done
log "$tried requests: ${#routes[@]} routes, five scopes"
assert_eq "0|0|0" "$(changed)" \
    "nothing changed: every request past its authorization was refused on its content"

log "what a refusal says"
expect 403 POST /api/v1/dead-letters/purge '{}' "${SECRET[operate]}"
assert_contains "$CALL_BODY" "key '$k-operate' has scope operate; this needs admin or above"
expect 403 POST /api/v1/dead-letters/purge '{}' "${SECRET[write]}"
assert_contains "$CALL_BODY" "key '$k-write' has scope operate; this needs admin or above"
expect 403 POST /api/v1/executions '{}' "${SECRET[read]}"
assert_contains "$CALL_BODY" "key '$k-read' may only read"

log "a real submit with a submit key, a cancel of it with a write key (operate)"
action=$(unique_name scope.act)
forget_executions "$action"
expect 201 POST /api/v1/executions "{\"action_ref\": \"$action\"}" "${SECRET[submit]}"
id=$(jq -r .id <<<"$CALL_BODY")
assert_eq "$k-submit" "$(exec_field "$id" submitted_by)" "submitted_by"
expect 403 POST "/api/v1/executions/$id/cancel" '' "${SECRET[submit]}"
expect 200 POST "/api/v1/executions/$id/cancel" '' "${SECRET[write]}"
assert_eq "cancelled|$k-write" "$(exec_field "$id" "status || '|' || cancelled_by")" "cancelled by the write key"

log "the warning again at a reload"
sighup ex "$EXEC_PID" "\"msg\":\"API key scope .write. is deprecated.*\"key\":\"$k-write\"" 10
exec_stop "$EXEC_PID" ex
pass
