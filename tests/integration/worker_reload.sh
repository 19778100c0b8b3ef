#!/usr/bin/env bash
# SIGHUP reloads a worker's configuration file: a new log level and handler timeout take effect
# at once, a changed key that needs a restart is named and keeps its value, and a broken file is
# logged (file, line, key) and changes nothing.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

conf="$TEST_TMP/warren.conf"
cat >"$conf" <<'EOF'
log = { level = "info"; };
worker = { max_concurrency = 4; };
EOF
new_worker w reload
start_worker worker "$w" -c "$conf"
wq="worker.$w.executions"
# The announce at subscription was sent, at debug: not written at info.
wait_msg "$TOPO_HEARTBEATS" ".body.payload.worker_id == \"$w\"" >/dev/null
assert_not_contains "$(cat "$(bg_log worker)")" '"msg":"heartbeat sent"' "debug lines at level info"

cat >"$conf" <<'EOF'
log = { level = "debug"; };
worker = { max_concurrency = 2; default_timeout_s = 1; };
EOF
sighup worker "$BG_PID" '"msg":"configuration reloaded"'
assert_eq "$conf|log.level, worker.default_timeout_s" "$(jq -r '"\(.file)|\(.changed)"' <<<"$LOG_LINE")" \
    "what the reload took"
line=$(grep '"msg":"reload: changed keys need a restart' "$(bg_log worker)") ||
    fail "no line naming the keys that need a restart"
assert_eq "worker.max_concurrency" "$(jq -r .keys <<<"$line")" "keys that need a restart"
# The log level: heartbeats (every second here) are logged from now on.
try_until 20 "log_since worker '\"msg\":\"configuration reloaded\"' | grep -q '\"msg\":\"heartbeat sent\"'" ||
    fail "no debug line after the reload"
# The timeout: a dispatch without one gets the new default of 1 s.
id=$(exec_id)
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.sleep '{"seconds": 30}')"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" 20 | jq -c .body.payload)
assert_eq "timeout|timed out after 1 s" "$(jq -r '"\(.status)|\(.error)"' <<<"$p")" "timeout after the reload: $p"
# The restart-only key kept its value: heartbeats still announce a capacity of 4.
collect "$TOPO_HEARTBEATS"
assert_eq 4 "$(msgs "$TOPO_HEARTBEATS" ".body.payload.worker_id == \"$w\"" | jq '.[-1].body.payload.capacity')" \
    "capacity after the reload"

# A broken file: the error names file, line and key; the running configuration stays.
cat >"$conf" <<'EOF'
log = { level = "info"; };
worker = { default_timeout_s = 600; defualt_timeout_s = 5; };
EOF
sighup worker "$BG_PID" '"msg":"reload failed: keeping the running configuration"'
assert_eq "$conf:2: worker.defualt_timeout_s: unknown key" "$(jq -r .error <<<"$LOG_LINE")" \
    "the reload error"
assert_eq error "$(jq -r .level <<<"$LOG_LINE")" "the reload error's level"
try_until 20 "log_since worker '\"msg\":\"reload failed' | grep -q '\"msg\":\"heartbeat sent\"'" ||
    fail "the log level went back after a failed reload"
id=$((id + 1))
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.sleep '{"seconds": 30}')"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" 20 | jq -c .body.payload)
assert_eq "timeout|timed out after 1 s" "$(jq -r '"\(.status)|\(.error)"' <<<"$p")" \
    "the timeout after a failed reload: $p"

wait_settled "$wq"
stop_worker worker "$BG_PID"
assert_contains "$WORKER_STATS" '"timeout":"2"'
pass
