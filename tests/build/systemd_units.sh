#!/usr/bin/env bash
# The systemd units as `cmake --install` writes them pass `systemd-analyze verify` (every key
# known and valid, the binary and /bin/kill present: checked in a root made of the install and
# the host's own units, no running systemd needed) with no message at all, stay within an
# exposure level of `systemd-analyze security --offline`, and agree with conf/warren.conf:
# Type=notify, reload by SIGHUP, the installed config file, KillMode=mixed (only the daemon gets SIGTERM, so
# handlers are not killed before the drain) and a TimeoutStopSec above the drain's bound.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/deploy.sh"

command -v systemd-analyze >/dev/null || fail "systemd-analyze missing: apt-get install systemd (scripts/deps)"
root=$TEST_TMP/root
DESTDIR=$root cmake --install "$WARREN_BUILD_DIR" >"$TEST_TMP/install.log"
units=$(find "$root" -path '*/lib/systemd/system/warren-*' -type f | sort)
names=$(find "$root" -path '*/lib/systemd/system/warren-*' -type f -printf '%f\n' | sort | paste -sd ' ')
assert_eq "warren-executor.service warren-migrate.service warren-worker@.service" "$names" \
    "installed units"
unitdir=$(dirname "$(head -n 1 <<<"$units")")
# What the units refer to outside the install: the host's targets and /bin/kill.
mkdir -p "$root/lib/systemd" "$root/bin"
cp -a /lib/systemd/system "$root/lib/systemd/"
cp /bin/kill "$root/bin/kill"

cd "$unitdir"
names=(warren-executor.service warren-migrate.service warren-worker@w1.service)
out=$(systemd-analyze verify --root="$root" "${names[@]}" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify complained: $out"
# Exposure thresholds in tenths of the printed level (1.5 and 4.0): the worker runs arbitrary
# handlers, so it keeps fewer restrictions (warren-worker@.service says which and why).
for u in warren-executor.service:15 warren-migrate.service:15 warren-worker@w1.service:40; do
    out=$(systemd-analyze security --offline=yes --root="$root" --threshold="${u##*:}" --no-pager \
        "${u%%:*}" 2>&1) || fail "${u%%:*}: exposure above ${u##*:}/10: $(tail -n 1 <<<"$out")"
done

# key UNIT KEY: the unit's value of KEY (the last one wins, as systemd reads it).
key() { sed -n "s/^$2=//p" "$unitdir/$1" | tail -n 1; }
conf=$(key warren-executor.service ExecStart | awk '{print $4}')
bin=$(key warren-executor.service ExecStart | awk '{print $1}')
[ -f "$root$conf" ] || fail "the units' config file $conf is not what the install put there"
[ -x "$root$bin" ] || fail "the units' binary $bin is not installed"
for u in warren-executor.service warren-worker@.service; do
    assert_eq notify "$(key "$u" Type)" "$u Type"
    assert_eq mixed "$(key "$u" KillMode)" "$u KillMode"
    # shellcheck disable=SC2016 # $MAINPID is systemd's, literal in the unit
    assert_eq '/bin/kill -HUP $MAINPID' "$(key "$u" ExecReload)" "$u reload (SIGHUP)"
    assert_eq "-${conf%.conf}.env" "$(key "$u" EnvironmentFile)" "$u secrets file"
    for h in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes CapabilityBoundingSet=; do
        grep -qx "$h" "$u" || fail "$u lacks $h"
    done
done
assert_eq "$bin worker -c $conf --name %i" "$(key warren-worker@.service ExecStart)" "worker command"
assert_eq "$bin migrate -c $conf" "$(key warren-migrate.service ExecStart)" "migrate command"

stop=$(seconds_of "$(key warren-worker@.service TimeoutStopSec)")
# shellcheck disable=SC2119 # no VAR=VALUE overrides: the values of conf/warren.conf
bound=$(worker_drain_bound_s)
[ "$stop" -ge "$bound" ] ||
    fail "warren-worker@ TimeoutStopSec=${stop}s is below the worker's drain bound ${bound}s (conf/warren.conf)"
ex_stop=$(seconds_of "$(key warren-executor.service TimeoutStopSec)")
ex_bound=$(($(conf_value message_queue.rabbitmq.publish_timeout_ms) / 1000 + $(conf_value database.connect_timeout_s) + 10))
[ "$ex_stop" -ge "$ex_bound" ] ||
    fail "warren-executor TimeoutStopSec=${ex_stop}s is below its drain bound ${ex_bound}s"
log "worker stop ${stop}s >= drain bound ${bound}s; executor ${ex_stop}s >= ${ex_bound}s"
pass
