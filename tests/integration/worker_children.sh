#!/usr/bin/env bash
# Handler processes never outlive the worker and never linger as zombies: a worker killed with
# SIGKILL takes its running handler's process and group with it within two seconds, and a
# worker running as PID 1 (a container's init, here a PID namespace) reaps the orphans its
# handlers leave behind.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env
command -v unshare >/dev/null || fail "unshare (util-linux) is needed"

# gone PID...: none of them exists any more (a zombie awaiting its reaper counts as gone).
# shellcheck disable=SC2317 # called by wait_until
gone() {
    local p
    for p in "$@"; do
        [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && return 1
    done
    return 0
}

# ---- SIGKILL: core.sleep is a shell running sleep, so its group has two processes.
new_worker w kill
start_worker worker "$w"
id=$(exec_id)
secs="61.$RANDOM"
publish_dispatch "$w" "$(dispatch_body "$id" "$w" core.sleep "{\"seconds\": $secs}")"
wait_msg "$TOPO_RESULTS" "$(is_status "$id")" >/dev/null
wait_until 5 pgrep -f "sleep $secs"
sleeper=$(pgrep -f "sleep $secs")
pgid=$(ps -o pgid= -p "$sleeper" | tr -d ' ')
group=$(pgrep -g "$pgid" | tr '\n' ' ')
[ "$(wc -w <<<"$group")" -ge 2 ] || fail "expected the shell and its sleep in group $pgid: $group"
guard=$(pgrep -P "$BG_PID" -x warren-guard) || fail "no handler guard under the worker"
kill -KILL "$BG_PID"
# shellcheck disable=SC2086
wait_until 2 gone $group
wait_until 2 gone "$guard"

# ---- PID 1: a handler that leaves a grandchild in its group (killed when the handler exits)
# and one in a session of its own that ends a moment later; both become the worker's children.
hdir="$TEST_TMP/handlers"
mkdir -p "$hdir"
cat >"$hdir/t.orphans" <<'SH'
#!/bin/sh
(sleep 30 &)
setsid sh -c 'sleep 0.3' >/dev/null 2>&1 </dev/null &
echo '{"left": 2}'
SH
chmod 755 "$hdir/t.orphans"
export WARREN__WORKER__HANDLERS_DIR=$hdir
new_worker p one
bg_start pid1 unshare --fork --pid --mount-proc --kill-child "$WARREN_BIN" worker --name "$p"
wait_log pid1 '"msg":"consuming dispatches"' 20
wpid=$(pgrep -P "$BG_PID" -f "worker --name $p")
publish_dispatch "$p" "$(dispatch_body "$((id + 1))" "$p" t.orphans '{}')"
wait_msg "$TOPO_RESULTS" "$(is_completion "$((id + 1))")" >/dev/null
# shellcheck disable=SC2317,SC2009 # called in wait_until's condition; counts children by state
zombies() { ps -o stat= --ppid "$wpid" | grep -c '^Z' || true; }
sleep 1
# shellcheck disable=SC2016 # the text is evaluated later, by wait_until
wait_until 5 '[ "$(zombies)" = 0 ]'
kill -TERM "$wpid"
wait_until 15 '! kill -0 '"$wpid"' 2>/dev/null'
stats=$(grep '"msg":"worker stopped"' "$(bg_log pid1)")
[ "$(jq -r .orphans_reaped <<<"$stats")" -ge 2 ] || fail "orphans reaped: $stats"
pass
