#!/usr/bin/env bash
# SIGHUP reloads the executor's configuration file: the timeout monitor, off at start, runs once
# the file turns it on and fails a dispatch nobody started; the new log level is in force; a
# changed key that needs a restart is named; a broken file is logged and changes nothing.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

isolate_topology
fake_worker slow reload # live, but never starts anything
action=$(unique_name act)
forget_executions "$action"
export WARREN__LOG__FORMAT=json
conf="$TEST_TMP/warren.conf"
cat >"$conf" <<'EOF'
log = { level = "info"; };
database = { statement_timeout_ms = 5000; };
executor = { poll_interval_ms = 50; monitor_interval_s = 0; scheduled_timeout_s = 1; };
EOF
"$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"
bg_start ex "$WARREN_BIN" executor -c "$conf"
pid=$BG_PID
wait_log ex '"executor started"' 20

heartbeat_seen "$slow" "$action"
id=$(new_execution "$action")
wait_until 10 "[ \"\$(exec_field $id status)\" = scheduled ]"
# A fixed wait, to show what does not happen: with the monitor off, the dispatch nobody starts
# stays scheduled well past scheduled_timeout_s.
sleep 3
assert_eq scheduled "$(exec_field "$id" status)" "status with the monitor off"
assert_not_contains "$(cat "$(bg_log ex)")" '"level":"debug"' "debug lines at level info"

cat >"$conf" <<'EOF'
log = { level = "debug"; };
database = { statement_timeout_ms = 6000; };
executor = { poll_interval_ms = 50; monitor_interval_s = 1; scheduled_timeout_s = 1; };
EOF
sighup ex "$pid" '"msg":"configuration reloaded"'
assert_eq "log.level, executor.monitor_interval_s" "$(jq -r .changed <<<"$LOG_LINE")" "what the reload took"
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

exec_stop "$pid" ex
assert_eq 2 "$(stat_of "$EXEC_STATS" monitor_failed)" "monitor_failed"
pass
