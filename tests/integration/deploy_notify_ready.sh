#!/usr/bin/env bash
# Readiness notification (sd_notify, Type=notify units): the test plays systemd with a socket
# named by NOTIFY_SOCKET. A worker whose broker is not there yet says what it waits for and sends
# READY=1 only once it consumes its queue; an executor that cannot reach its broker exits without
# READY=1, and one that starts sends it only with its consumers subscribed. SIGHUP brings
# RELOADING=1 then READY=1, SIGTERM STOPPING=1; WATCHDOG_USEC brings WATCHDOG=1 pings. Every
# datagram comes from the daemon's own pid (NotifyAccess=main).
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/notify.sh"
require_stack
worker_env

# consumers_on VHOST QUEUE: the broker's exact consumer count (rabbitmqctl, not the lagging
# statistics of the management API).
consumers_on() {
    rmq list_queues -q -p "$1" name consumers | awk -v q="$2" '$1 == q { print $2 }'
}

# The worker's broker is a virtual host that does not exist yet: connecting fails until the
# test creates it, as when RabbitMQ is still starting.
vhost=$(unique_name notify)
on_exit "mgmt_delete 'vhosts/$(urlencode "$vhost")' >/dev/null 2>&1"
late_url="${WARREN__MESSAGE_QUEUE__RABBITMQ__URL%/*}/$(urlencode "$vhost")"
new_worker w notify
notify_listen worker
NOTIFY_SOCKET=$NOTIFY_ADDR WARREN__MESSAGE_QUEUE__RABBITMQ__URL=$late_url \
    bg_start worker "$WARREN_BIN" worker --name "$w"
worker_pid=$BG_PID
wait_notify worker 'STATUS=waiting for RabbitMQ: cannot consume worker\..*' 30
# Two failed attempts seen: it tried, and is still not ready.
try_until 30 "[ \$(grep -c 'cannot consume the worker queue; retrying' '$(bg_log worker)') -ge 2 ]" ||
    fail "the worker did not retry"
assert_eq 0 "$(notify_count worker READY=1)" "READY=1 while the broker cannot be used"

mgmt_put "vhosts/$(urlencode "$vhost")" '{}' >/dev/null
mgmt_put "permissions/$(urlencode "$vhost")/$(urlencode "$WARREN_RABBIT_USER")" \
    '{"configure":".*","write":".*","read":".*"}' >/dev/null
wait_notify worker 'READY=1' 60
assert_contains "$(cat "$(notify_file worker)")" "STATUS=consuming worker.$w.executions"
assert_eq 1 "$(consumers_on "$vhost" "worker.$w.executions")" "consumers when READY=1 arrived"

sighup worker "$worker_pid" '"msg":"configuration reloaded"'
try_until 20 "[ \$(grep -cxF READY=1 '$(notify_file worker)') -ge 2 ]" ||
    fail "no READY=1 after the reload: $(tr '\n' ' ' <"$(notify_file worker)")"
rc=0
bg_stop "$worker_pid" 30 || rc=$?
assert_eq 0 "$rc" "worker exit status after SIGTERM"
assert_contains "$(cat "$(notify_file worker)")" "STOPPING=1"
# In order: ready, reloading, ready again, stopping.
order=$(grep -xE 'READY=1|RELOADING=1|STOPPING=1' "$(notify_file worker)" | tr '\n' ' ')
assert_eq "READY=1 RELOADING=1 READY=1 STOPPING=1 " "$order" "the worker's state changes"
assert_eq "$worker_pid" "$(notify_senders worker)" "every datagram from the worker's pid"

# The executor without its broker: it exits 1, and never says READY=1 (abstract socket name).
notify_listen nobroker abstract
NOTIFY_SOCKET=$NOTIFY_ADDR WARREN__MESSAGE_QUEUE__RABBITMQ__URL="${late_url%/*}/no-such-vhost-$$" \
    run_warren nobroker executor
assert_eq 1 "$RUN_RC" "executor exit status without its broker"
assert_contains "$RUN_ERR" "cannot connect to RabbitMQ"
try_until 10 grep -qx 'STATUS=connecting to RabbitMQ.*' "$(notify_file nobroker)" ||
    fail "no status while connecting: $(tr '\n' ' ' <"$(notify_file nobroker)")"
assert_eq 0 "$(notify_count nobroker READY=1)" "READY=1 from an executor that did not start"

# The executor that starts: READY=1 only with its consumers there; a watchdog is pinged.
notify_listen executor abstract
NOTIFY_SOCKET=$NOTIFY_ADDR WATCHDOG_USEC=1000000 exec_start executor
wait_notify executor 'READY=1' 30
for q in "$TOPO_RESULTS" "$TOPO_HEARTBEATS" "$TOPO_DLQ" "$TOPO_PARKING"; do
    assert_eq 1 "$(consumers_on / "$q")" "consumers on $q when READY=1 arrived"
done
try_until 20 "[ \$(grep -cxF WATCHDOG=1 '$(notify_file executor)') -ge 3 ]" ||
    fail "no watchdog pings: $(tr '\n' ' ' <"$(notify_file executor)")"
sighup executor "$EXEC_PID" '"msg":"configuration reloaded"'
try_until 20 "[ \$(grep -cxF READY=1 '$(notify_file executor)') -ge 2 ]" ||
    fail "no READY=1 after the executor's reload"
exec_stop "$EXEC_PID" executor
order=$(grep -xE 'READY=1|RELOADING=1|STOPPING=1' "$(notify_file executor)" | tr '\n' ' ')
assert_eq "READY=1 RELOADING=1 READY=1 STOPPING=1 " "$order" "the executor's state changes"
assert_eq "$EXEC_PID" "$(notify_senders executor)" "every datagram from the executor's pid"
pass
