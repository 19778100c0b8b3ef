#!/usr/bin/env bash
# The Debian package: scripts/package builds warren_*.deb (declared dependencies, conffile,
# systemd units, maintainer scripts); `apt-get install ./warren_*.deb` installs it on this
# machine and creates the warren system user; then, as that user and from the installed files
# only, `warren config check` passes, `warren migrate --status` reads the installed schema, the
# installed units pass `systemd-analyze verify`; the install made the signing key that
# warren.conf names (warren's file, mode 0600) and keeps it on a reinstall; the installed
# executor and worker sign with it, and the worker runs an executable and a C handler from
# /usr/libexec/warren/handlers that the executor dispatched; what the Dockerfile runs from it
# (ENTRYPOINT, WARREN_CONFIG) is in it. Purging removes the key.
# Needs root (CI runs as root). One package test runs at a time on a machine (a lock), since
# the package is installed system-wide.
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
WARREN_TEST_TIMEOUT=${WARREN_TEST_TIMEOUT:-280} # building the package takes a while
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
require_stack

[ "$(id -u)" = 0 ] || fail "the package test installs a .deb: run it as root"
exec 9>/run/lock/warren-package-test.lock
flock -w 120 9 || fail "another package test holds /run/lock/warren-package-test.lock"
# A package left by an interrupted run of this test carries this marker; any other installed
# warren is someone's, and the test will not replace it.
marker=/var/lib/warren-package-test.installed
status=$(dpkg-query -W -f='${db:Status-Status}' warren 2>/dev/null || true)
if [ "$status" = installed ] && [ ! -e "$marker" ]; then
    fail "a warren package is installed on this machine and not by this test; remove it first (apt-get purge warren)"
fi

apt_opts=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=120)
purge() {
    DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" purge warren >"$TEST_TMP/purge.log" 2>&1 || true
    rm -f "$marker"
}
deb=$(WARREN_PACKAGE_BUILD_DIR="$TEST_TMP/build" bash "$WARREN_SOURCE_DIR/scripts/package" \
    --out "$TEST_TMP/deb" 2>"$TEST_TMP/package.log") || fail "scripts/package: $(tail -n 20 "$TEST_TMP/package.log")"
log "built $(basename "$deb")"

# What the package declares.
depends=$(dpkg-deb -f "$deb" Depends)
for d in adduser librabbitmq4 libpq5 libjson-c5 libevent-2.1-7 libconfig9; do
    assert_contains "$depends" "$d" "Depends"
done
assert_eq /etc/warren/warren.conf "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" "conffiles"
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/warren ./usr/bin/warren-worker ./usr/libexec/warren/handlers/core.echo ./usr/libexec/warren/handlers/example_upper.so \
    ./usr/share/warren/schema/001_init.sql ./usr/share/warren/schema/superseded.sha256 \
    ./usr/share/warren/schema/functions/010_touch_updated_at.sql ./etc/warren/warren.conf ./usr/include/warren/handler.h \
    ./usr/share/pkgconfig/warren-handler.pc ./usr/share/doc/warren/README.md ./usr/share/doc/warren/openapi.json \
    ./usr/lib/systemd/system/warren-executor.service ./usr/lib/systemd/system/warren-worker@.service \
    ./usr/lib/systemd/system/warren-migrate.service; do
    grep -qx "$f" <<<"$files" || fail "the package lacks $f"
done

# The container image (Dockerfile) installs this package: what it runs must be in it.
entry=$(sed -n 's/^ENTRYPOINT //p' "$WARREN_SOURCE_DIR/Dockerfile" | jq -r '.[0]')
grep -qx ".$entry" <<<"$files" || fail "the Dockerfile's ENTRYPOINT $entry is not in the package"
image_conf=$(sed -n 's/^ENV WARREN_CONFIG=//p' "$WARREN_SOURCE_DIR/Dockerfile")
grep -qx ".$image_conf" <<<"$files" || fail "the Dockerfile's WARREN_CONFIG $image_conf is not in the package"

on_exit purge
touch "$marker"
(cd "$(dirname "$deb")" && DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install \
    --no-install-recommends ./warren_*.deb) >"$TEST_TMP/install.log" 2>&1 ||
    fail "apt-get install ./warren_*.deb: $(tail -n 20 "$TEST_TMP/install.log")"
assert_eq installed "$(dpkg-query -W -f='${db:Status-Status}' warren)" "package state"
uid=$(id -u warren) || fail "no warren user after install"
[ "$uid" -lt 1000 ] || fail "warren (uid $uid) is not a system user"
assert_eq "root:warren 750" "$(stat -c '%U:%G %a' /etc/warren)" "/etc/warren ownership and mode"
key=/var/lib/warren/signing.key
assert_eq "warren:warren 700" "$(stat -c '%U:%G %a' /var/lib/warren)" "/var/lib/warren ownership and mode"
assert_eq "warren:warren 600" "$(stat -c '%U:%G %a' "$key")" "the signing key's ownership and mode"
grep -Eqx 'k[0-9]{8} [0-9a-f]{64}' "$key" || fail "the signing key is not one line \"KEY_ID SECRET\": $(grep -vc '^#' "$key") lines"
key_id=$(awk '!/^#/ { print $1; exit }' "$key")
sum=$(sha256sum "$key")
(cd "$(dirname "$deb")" && DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install --reinstall \
    --no-install-recommends ./warren_*.deb) >"$TEST_TMP/reinstall.log" 2>&1 ||
    fail "apt-get install --reinstall: $(tail -n 20 "$TEST_TMP/reinstall.log")"
assert_eq "$sum" "$(sha256sum "$key")" "the signing key kept across a reinstall"

# as_warren CMD...: run as the package's user, in this environment (the stack's URLs).
as_warren() { setpriv --reuid=warren --regid=warren --init-groups -- "$@"; }
cd / # nothing below may lean on the checkout
out=$(as_warren /usr/bin/warren config check -c /etc/warren/warren.conf 2>&1) || fail "config check: $out"
assert_contains "$out" "message_queue.signing_key_file                 = \"$key\"" \
    "warren.conf names the key the install made"
assert_contains "$out" 'worker.handlers_dir                            = "/usr/libexec/warren/handlers"' \
    "handlers found beside the installed binary"
out=$(as_warren /usr/bin/warren migrate -c /etc/warren/warren.conf 2>&1) || fail "migrate: $out"
out=$(as_warren /usr/bin/warren migrate -c /etc/warren/warren.conf --status 2>&1) || fail "migrate --status: $out"
assert_contains "$out" "001_init.sql" "the installed schema"
migrations=("$WARREN_SOURCE_DIR"/schema/[0-9]*_*.sql)
definitions=("$WARREN_SOURCE_DIR"/schema/functions/*.sql)
assert_contains "$out" "$(basename "${migrations[-1]}")" "the installed schema is complete"
assert_contains "$out" "functions/$(basename "${definitions[-1]}")" "the installed definitions"
assert_contains "$out" "0 pending" "every installed migration is applied"
out=$(systemd-analyze verify /usr/lib/systemd/system/warren-executor.service \
    /usr/lib/systemd/system/warren-migrate.service warren-worker@w1.service 2>&1) ||
    fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify on the installed units: $out"

# The installed executor and a worker from the installed files, as warren, signing with the
# installed key; the worker's handlers are /usr/libexec/warren/handlers.
worker_env
exec_env
unset WARREN__WORKER__HANDLERS_DIR
bg_start ex setpriv --reuid=warren --regid=warren --init-groups -- \
    /usr/bin/warren executor -c /etc/warren/warren.conf
ex_pid=$BG_PID
wait_log ex '"executor started"' 20
new_worker w pkg
bg_start worker setpriv --reuid=warren --regid=warren --init-groups -- \
    /usr/bin/warren worker -c /etc/warren/warren.conf --name "$w"
worker_pid=$BG_PID
wait_log worker '"msg":"consuming dispatches"' 20
assert_contains "$(cat "$(bg_log worker)")" '/usr/libexec/warren/handlers' "the worker's handlers directory"
for d in ex worker; do # each signs with the installed key
    wait_log "$d" "\"msg\":\"messages signed and checked\".*\"key_id\":\"$key_id\"" 5
done
wait_until 15 "[ \"\$(psql_q \"select status from workers where id = '$w'\")\" = online ]"
echo_id=$(new_execution core.echo "$w" '{"from":"package"}')
upper_id=$(new_execution example.upper "$w" '{"s":"deb"}')
on_exit "psql_q \"update executions set status = 'cancelled' where id in ($echo_id, $upper_id)
    and status not in ('completed', 'failed', 'cancelled', 'timeout', 'abandoned')\" >/dev/null 2>&1"
wait_until 20 "[ \"\$(exec_field $echo_id status)\$(exec_field $upper_id status)\" = completedcompleted ]"
assert_eq '{"from": "package"}' "$(exec_field "$echo_id" result)" "core.echo from the package"
assert_eq '{"S": "DEB"}' "$(exec_field "$upper_id" result)" "example.upper (C handler) from the package"
assert_eq 0 "$(psql_q "select count(*) from dead_letters where execution_id in ($echo_id, $upper_id)
                       or reason = 'bad_signature' and routing_key like '%.$w'")" "nothing refused"
stop_worker worker "$worker_pid"
bg_stop "$ex_pid" 15 || fail "the installed executor did not stop cleanly"
purge
[ ! -e /var/lib/warren ] || fail "purge left /var/lib/warren: $(ls -la /var/lib/warren)"
pass
