#!/usr/bin/env bash
# SIGHUP reloads the executor's configuration file: the timeout monitor, off at start, runs once
# the file turns it on and fails a dispatch nobody started; the new log level is in force; the
# API takes the keys of its rewritten keys file and the new api.auth_reads; a changed key that
# needs a restart is named; a broken file, or a keys file others may read, is logged and changes
# nothing.
# shellcheck disable=SC2154 # slow is set by fake_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

isolate_topology
fake_worker slow reload # live, but never starts anything
action=$(unique_name act)
forget_executions "$action"
export WARREN__LOG__FORMAT=json
# The monitor fails the dispatch nobody started, not redispatched first (docs/retries.md).
export WARREN__EXECUTOR__MAX_REDISPATCHES=0
conf="$TEST_TMP/warren.conf"
api_keys_file # "ops" (admin) and "viewer" (read)
cat >"$conf" <<EOF
log = { level = "info"; };
database = { statement_timeout_ms = 5000; };
executor = { poll_interval_ms = 50; monitor_interval_s = 0; scheduled_timeout_s = 1; };
api = { keys_file = "$API_KEYS_FILE"; auth_reads = true; };
EOF
"$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"
bg_start ex "$WARREN_BIN" executor -c "$conf"
pid=$BG_PID
wait_log ex '"executor started"' 20
API="http://127.0.0.1:$(http_port ex)"
expect 200 GET /api/v1/workers '' "$API_READ_KEY"
expect 401 GET /api/v1/workers '' -

heartbeat_seen "$slow" "$action"
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
# A fixed wait, to show what does not happen: with the monitor off, the dispatch nobody starts
# stays scheduled well past scheduled_timeout_s.
sleep 3
assert_eq scheduled "$(exec_field "$id" status)" "status with the monitor off"
assert_not_contains "$(cat "$(bg_log ex)")" '"level":"debug"' "debug lines at level info"

# The keys file rotated: a new operate key, the viewer gone; reads need no key any more.
new_key=rotated-key-$RANDOM$RANDOM-0123456789
(umask 077 && printf 'ops2 operate %s\n' "$new_key" >"$API_KEYS_FILE")
cat >"$conf" <<EOF
log = { level = "debug"; };
database = { statement_timeout_ms = 6000; };
executor = { poll_interval_ms = 50; monitor_interval_s = 1; scheduled_timeout_s = 1; };
api = { keys_file = "$API_KEYS_FILE"; auth_reads = false; };
EOF
cp "$conf" "$TEST_TMP/good.conf"
sighup ex "$pid" '"msg":"configuration reloaded"'
assert_eq "log.level, executor.monitor_interval_s, api.auth_reads" "$(jq -r .changed <<<"$LOG_LINE")" \
    "what the reload took"
line=$(grep '"msg":"api keys reloaded"' "$(bg_log ex)") || fail "no line about the API keys"
assert_eq "1|ops2:operate|false" "$(jq -r '"\(.keys)|\(.names)|\(.auth_reads)"' <<<"$line")" "the keys taken"
expect 403 GET /api/v1/workers '' "$API_READ_KEY"
expect 403 POST /api/v1/executions "{\"action_ref\":\"$action.api\"}" "$API_WRITE_KEY"
expect 200 GET /api/v1/workers '' -
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action.api\"}" "$new_key"
line=$(grep '"msg":"reload: changed keys need a restart' "$(bg_log ex)") ||
    fail "no line naming the keys that need a restart"
assert_eq "database.statement_timeout_ms" "$(jq -r .keys <<<"$line")" "keys that need a restart"
wait_until 10 "[ \"\$(exec_field $id status)\" = failed ]"
assert_contains "$(exec_field "$id" error)" "Scheduled timeout" "why it failed"
# The log level: a heartbeat's batch is logged at debug from now on.
heartbeat "$slow" "$action" 10 60
try_until 10 "log_since ex '\"msg\":\"configuration reloaded\"' | grep -q '\"level\":\"debug\"'" ||
    fail "no debug line after the reload"

# A broken file: the error names file, line and key; the running configuration stays (debug
# lines go on, the monitor still fails what nobody starts).
cat >"$conf" <<'EOF'
log = { level = "info"; };
executor = { monitor_interval_s = 0; batch_size = 0; };
EOF
sighup ex "$pid" '"msg":"reload failed: keeping the running configuration"'
assert_eq "$conf:2: executor.batch_size: 0 is out of bounds [1, 10000]" "$(jq -r .error <<<"$LOG_LINE")" \
    "the reload error"
heartbeat "$slow" "$action" 10 60
try_until 10 "log_since ex '\"msg\":\"reload failed' | grep -q '\"level\":\"debug\"'" ||
    fail "the log level went back after a failed reload"
id2=$(new_execution "$action")
wait_until 15 "[ \"\$(exec_field $id2 status)\" = failed ]"

# The running configuration's file again, but its keys file readable by others: refused like a
# broken file; the running keys stay.
cp "$TEST_TMP/good.conf" "$conf"
chmod 0644 "$API_KEYS_FILE"
sighup ex "$pid" '"msg":"reload failed: keeping the running configuration"'
assert_contains "$(jq -r .error <<<"$LOG_LINE")" "readable or writable by group or others"
chmod 0600 "$API_KEYS_FILE"
expect 201 POST /api/v1/executions "{\"action_ref\":\"$action.api\"}" "$new_key"
assert_not_contains "$(cat "$(bg_log ex)")" "$new_key" "secrets in the executor's log"
assert_not_contains "$(cat "$(bg_log ex)")" "$API_WRITE_KEY" "secrets in the executor's log"

exec_stop "$pid" ex
assert_eq 2 "$(stat_of "$EXEC_STATS" monitor_failed)" "monitor_failed"
pass
