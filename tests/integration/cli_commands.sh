#!/usr/bin/env bash
# The operator commands against a real database: submit (validation, --wait), get, list, workers.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

# A database of our own: no executor ever touches these rows, and no other test sees them.
private_database cli
"$WARREN_BIN" migrate >"$TEST_TMP/migrate.out"
export WARREN__LOG__LEVEL=warn

W=("$WARREN_BIN")
rc_of() { local rc=0; "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?; echo "$rc"; }
count() { psql_q "SELECT count(*) FROM executions"; }

log "--help on every command, exit 0"
for cmd in submit get list workers; do
    out=$("${W[@]}" "$cmd" --help)
    assert_contains "$out" "usage: warren $cmd" "$cmd --help"
done

log "submit: the row exists with its params, pinned worker and timeout"
id=$("${W[@]}" submit core.echo --params '{"greeting": "hi", "n": [1, 2]}' --worker w-1.a --timeout 7)
[[ $id =~ ^[0-9]+$ ]] || fail "submit printed '$id', not an id"
assert_eq 'core.echo|requested|hi|2|w-1.a|7|0' \
    "$(psql_q "SELECT action_ref, status, params->>'greeting', params->'n'->>1, pinned_worker,
                      timeout_s, attempt FROM executions WHERE id = $id")" "submitted row"
id2=$("${W[@]}" submit core.noop)
assert_eq '{}||' "$(psql_q "SELECT params, pinned_worker, timeout_s FROM executions WHERE id = $id2")" \
    "defaults"
row=$("${W[@]}" submit core.sleep --params '{"seconds": 1}' --json)
assert_eq 'core.sleep requested 1' "$(jq -r '"\(.action_ref) \(.status) \(.params.seconds)"' <<<"$row")" \
    "submit --json"
id3=$(jq -r .id <<<"$row")

log "submit: usage errors exit 2 and insert nothing"
before=$(count)
# Each line is one argument list, split on spaces.
while read -r -a args; do
    assert_eq 2 "$(rc_of "${W[@]}" submit "${args[@]}")" "submit ${args[*]}"
done <<'EOF'
core.echo --params {bad}
core.echo --params [1,2]
core.echo --params 42
core.echo --params {"a":1}x
core.echo --params {'a':1}
core.echo --worker bad/id
core.echo --worker .w
core.echo --timeout 0
core.echo --timeout 5s
../etc/passwd
core.echo --wait-timeout 5
core.echo --bogus
core.echo extra

EOF
assert_contains "$(cat "$TEST_TMP/err")" "ACTION_REF missing"
assert_eq 2 "$(rc_of "${W[@]}" submit core.echo --params '{"a": 1')" "truncated JSON"
assert_contains "$(cat "$TEST_TMP/err")" "--params must be a JSON object"
assert_eq 2 "$(rc_of "${W[@]}" submit core.echo --worker 'has space')" "worker id with a space"
assert_contains "$(cat "$TEST_TMP/err")" "invalid worker id"
assert_eq 2 "$(rc_of "${W[@]}" submit core.echo --worker 'a..b')" "worker id with an empty word"
assert_contains "$(cat "$TEST_TMP/err")" "invalid worker id 'a..b': use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit, with no '..' and no trailing '.'"
assert_eq 2 "$(rc_of "${W[@]}" submit ../x)" "action ref leaving the handlers directory"
assert_contains "$(cat "$TEST_TMP/err")" "invalid action '../x': use 1 to 255 letters, digits, '.', '_' or '-', not starting with '.'"
assert_eq "$before" "$(count)" "rows after rejected submits"

log "get: readable layout, JSON, history and dead letters"
psql_q "UPDATE executions SET status = 'failed', worker = 'w-1.a', attempt = 1,
        error = 'Worker queue TTL expired' WHERE id = $id" >/dev/null
psql_q "INSERT INTO dead_letters (dedup_key, execution_id, reason, queue, body, resolution)
        VALUES ('cli-test-$id', $id, 'expired', 'worker.w-1.a.executions', 'x', 'investigating')" \
    >/dev/null
out=$("${W[@]}" get "$id")
for want in "execution $id" "core.echo" "failed" "w-1.a" "Worker queue TTL expired" \
    '"greeting": "hi"' "history (2)" "requested  failed" "dead letters (1)" "expired" \
    "worker.w-1.a.executions" "investigating"; do
    assert_contains "$out" "$want" "get $id"
done
doc=$("${W[@]}" get "$id" --json)
assert_eq "failed|w-1.a|1|hi|7" "$(jq -r '[.status, .pinned_worker, .attempt, .params.greeting,
    .timeout_s] | join("|")' <<<"$doc")" "get --json row"
assert_eq "expired investigating" "$(jq -r '.dead_letters[] | "\(.reason) \(.resolution)"' <<<"$doc")" \
    "get --json dead letters"
assert_eq "null,requested requested,failed" \
    "$(jq -r '[.events[] | "\(.from_status),\(.to_status)"] | join(" ")' <<<"$doc")" "get --json events"
assert_eq 0 "$(jq '.dead_letters | length' <<<"$("${W[@]}" get "$id2" --json)")" "no dead letters"

log "get and list show wait_reason and outcome (migrations 003, 004; added here if missing)"
psql_q "ALTER TABLE executions ADD COLUMN IF NOT EXISTS wait_reason text" >/dev/null
psql_q "UPDATE executions SET wait_reason = 'no live worker offers action ''core.noop'''
        WHERE id = $id2" >/dev/null
assert_contains "$("${W[@]}" get "$id2")" "wait reason    no live worker offers action 'core.noop'"
assert_contains "$("${W[@]}" list | grep "^$id2 ")" "no live worker offers action 'core.noop'"
assert_eq "no live worker offers action 'core.noop'" "$("${W[@]}" get "$id2" --json | jq -r .wait_reason)"

psql_q "ALTER TABLE executions ADD COLUMN IF NOT EXISTS outcome jsonb" >/dev/null
psql_q "UPDATE executions SET outcome = '{\"exit_code\": 3, \"stderr_tail\": \"boom\\n\"}' WHERE id = $id" \
    >/dev/null
assert_contains "$("${W[@]}" get "$id")" 'outcome        {"exit_code": 3, "stderr_tail": "boom\n"}'
assert_eq 3 "$("${W[@]}" get "$id" --json | jq .outcome.exit_code)" "outcome in get --json"

log "get: a missing id exits 1, a malformed one 2"
assert_eq 1 "$(rc_of "${W[@]}" get 999999)" "missing id"
assert_contains "$(cat "$TEST_TMP/err")" "no execution 999999"
for bad in abc 0 -3 "1 2" ""; do
    assert_eq 2 "$(rc_of "${W[@]}" get "$bad")" "get '$bad'"
done

log "list: newest first, --status filter, --limit, JSON"
out=$("${W[@]}" list)
assert_eq "ID ACTION STATUS WORKER ATTEMPT AGE RUN ERROR OR WAIT REASON" "$(head -n 1 <<<"$out" | tr -s ' ')" \
    "list header"
assert_eq "$id3 $id2 $id" "$(awk 'NR > 1 { printf "%s%s", sep, $1; sep = " " }' <<<"$out")" "list order"
assert_contains "$(grep "^$id " <<<"$out")" "w-1.a"
assert_contains "$(grep "^$id " <<<"$out")" "Worker queue TTL expired"
assert_contains "$(grep "^$id2 " <<<"$out")" "requested"
assert_eq "$id" "$("${W[@]}" list --status failed | awk 'NR > 1 { print $1 }')" "list --status failed"
assert_eq "" "$("${W[@]}" list --status abandoned | awk 'NR > 1')" "list --status abandoned"
assert_eq "$id3 $id2" "$("${W[@]}" list --status requested --json | jq -r 'map(.id) | join(" ")')" \
    "list --status requested --json"
assert_eq "$id3" "$("${W[@]}" list --limit 1 --json | jq -r '.[].id')" "list --limit 1"
assert_eq 2 "$(rc_of "${W[@]}" list --status bogus)" "list --status bogus"
assert_contains "$(cat "$TEST_TMP/err")" "requested, scheduling"
assert_eq 2 "$(rc_of "${W[@]}" list --limit 0)" "list --limit 0"

log "workers: live or stale from heartbeat age vs factor x interval"
psql_q "INSERT INTO workers (id, capabilities, capacity, running, heartbeat_interval_s, last_heartbeat)
        VALUES ('w-fresh', '{core.echo,core.noop}', 4, 1, 10, now() - interval '2 s'),
               ('w-25s', '{}', 2, 0, 10, now() - interval '25 s'),
               ('w-old', '{core.sleep}', 1, 0, 5, now() - interval '1 hour')" >/dev/null
# Fresh heartbeat but said goodbye: not live, as the scheduler sees it.
psql_q "INSERT INTO workers (id, capabilities, capacity, running, heartbeat_interval_s, last_heartbeat, status)
        VALUES ('w-gone', '{core.echo}', 4, 0, 10, now(), 'offline')" >/dev/null
out=$("${W[@]}" workers)
assert_eq "ID STATUS LIVENESS CAPACITY RUNNING HEARTBEAT AGE CAPABILITIES" "$(head -n 1 <<<"$out" | tr -s ' ')"
assert_eq "w-fresh online live 4 1 core.echo,core.noop" \
    "$(grep '^w-fresh ' <<<"$out" | awk '{ print $1, $2, $3, $4, $5, $7 }')" "workers w-fresh"
assert_contains "$(grep '^w-old ' <<<"$out")" "stale"
assert_contains "$(grep "^w-old " <<<"$out")" "1h00m"
# 25 s against 3 x 10 s (the default factor) is live; with a factor of 2 it is stale.
assert_eq "w-gone offline -" "$(grep '^w-gone ' <<<"$out" | awk '{ print $1, $2, $3 }')" "an offline worker"
assert_eq "w-25s:true w-fresh:true w-gone:false w-old:false" \
    "$("${W[@]}" workers --json | jq -r 'map("\(.id):\(.live)") | join(" ")')" "workers --json"
assert_eq "w-25s:false" "$(WARREN__EXECUTOR__HEARTBEAT_STALE_FACTOR=2 "${W[@]}" workers --json |
    jq -r '.[] | select(.id == "w-25s") | "\(.id):\(.live)"')" "stale factor from the config"
assert_eq 2 "$("${W[@]}" workers --json | jq '.[] | select(.id == "w-fresh") | .capabilities | length')"

log "submit --wait: exit 0 when it completes, 1 when it fails or the wait times out; told, not polling"
# Plays the executor's part: once the row is there, move it to a terminal status.
finish_next() { # finish_next LOG STATUS SET_SQL
    wait_log "$1" '^[0-9]+$' 20
    local wid; wid=$(head -n 1 "$(bg_log "$1")")
    # it waits on LISTEN warren_ended with a registration (schema 036), not by polling
    wait_until 10 "[ \"\$(psql_q \"SELECT count(*) FROM execution_waiters WHERE execution_id = $wid\")\" -ge 1 ]"
    psql_q "UPDATE executions SET status = '$2', $3 WHERE id = $wid" >/dev/null
    echo "$wid"
}
bg_start wait_ok "${W[@]}" submit core.echo --params '{"x": 1}' --wait --wait-timeout 60
pid=$BG_PID
wait_until 10 "[ \"\$(psql_q \"SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT status, result::text%'\")\" = 1 ]" # a poll saw it unfinished
finish_next wait_ok completed "result = '{\"x\": 1}', worker = 'w-fresh', attempt = 1" >/dev/null
rc=0; wait "$pid" || rc=$?
assert_eq 0 "$rc" "submit --wait on a completed execution"
assert_contains "$(cat "$(bg_log wait_ok)")" "status: completed"
assert_contains "$(cat "$(bg_log wait_ok)")" 'result: {"x": 1}'

bg_start wait_fail "${W[@]}" submit core.fail --wait
pid=$BG_PID
finish_next wait_fail failed "error = 'exit code 3'" >/dev/null
rc=0; wait "$pid" || rc=$?
assert_eq 1 "$rc" "submit --wait on a failed execution"
assert_contains "$(cat "$(bg_log wait_fail)")" "status: failed"
assert_contains "$(cat "$(bg_log wait_fail)")" "error: exit code 3"

bg_start wait_json "${W[@]}" submit core.echo --wait --json
pid=$BG_PID
try_until 20 "psql_q \"SELECT 1 FROM executions WHERE action_ref = 'core.echo' AND status = 'requested'
    AND params = '{}'\" | grep -q 1" || fail "submit --wait --json inserted nothing"
psql_q "UPDATE executions SET status = 'timeout', error = 'ran past 1s'
        WHERE action_ref = 'core.echo' AND status = 'requested' AND params = '{}'" >/dev/null
rc=0; wait "$pid" || rc=$?
assert_eq 1 "$rc" "submit --wait --json on a timed-out execution"
assert_eq "timeout ran past 1s" "$(jq -r '"\(.status) \(.error)"' "$(bg_log wait_json)")" "final row"

start=$(date +%s%N)
assert_eq 1 "$(rc_of "${W[@]}" submit core.echo --wait --wait-timeout 1)" "wait timeout"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
if [ "$elapsed_ms" -lt 1000 ] || [ "$elapsed_ms" -ge 5000 ]; then fail "wait timeout took ${elapsed_ms} ms"; fi
assert_contains "$(cat "$TEST_TMP/err")" "still requested after waiting 1s"
assert_eq requested "$(psql_q "SELECT status FROM executions WHERE id = $(head -n 1 "$TEST_TMP/out")")"

log "a database that cannot be reached is a runtime error (1)"
assert_eq 1 "$(WARREN__DATABASE__URL="${WARREN__DATABASE__URL%/*}/no_such_db_$$" rc_of "${W[@]}" list)" "no database"
assert_contains "$(cat "$TEST_TMP/err")" "warren list:"
pass
