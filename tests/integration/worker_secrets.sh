#!/usr/bin/env bash
# The worker's WARREN__* secrets stay in the worker: once it runs, its environment (as
# /proc/PID/environ shows it) holds none of them, and a handler running as the same user cannot
# read the worker's /proc files at all (the worker is not dumpable). As root the worker runs as
# nobody here, so that "the same user" is not root, whom nothing stops.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack
worker_env

as_user=()
if [ "$(id -u)" = 0 ]; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    chmod 755 "$TEST_TMP"
fi
hdir="$TEST_TMP/handlers"
mkdir -p "$hdir"
cat >"$hdir/t.peek" <<'SH'
#!/bin/sh
# What the worker's environment shows to a process of its user.
if text=$(tr '\0' '\n' <"/proc/$PPID/environ" 2>/dev/null); then
    printf '{"readable": true, "warren_vars": %s}\n' "$(printf '%s\n' "$text" | grep -c '^WARREN__')"
else
    echo '{"readable": false}'
fi
SH
chmod 755 "$hdir" "$hdir/t.peek"
export WARREN__WORKER__HANDLERS_DIR=$hdir
secret=$WARREN__MESSAGE_QUEUE__RABBITMQ__URL # it holds the broker's password

new_worker w secrets
bg_start worker "${as_user[@]}" "$WARREN_BIN" worker --name "$w"
wait_log worker '"msg":"consuming dispatches"' 20
wpid=$BG_PID
[ "$(tr '\0' '\n' <"/proc/$wpid/environ" | grep -c '^WARREN__')" = 0 ] ||
    fail "WARREN__ variables left in the worker's environment"
if grep -q -F "$secret" "/proc/$wpid/environ"; then fail "the broker URL is still in /proc/$wpid/environ"; fi

id=$(exec_id)
publish_dispatch "$w" "$(dispatch_body "$id" "$w" t.peek '{}')"
p=$(wait_msg "$TOPO_RESULTS" "$(is_completion "$id")" | jq -c .body.payload)
assert_eq completed "$(jq -r .status <<<"$p")" "status: $p"
assert_eq '{"readable":false}' "$(jq -c .result <<<"$p")" "a handler cannot read the worker's environment"
stop_worker worker "$wpid"
pass
