#!/usr/bin/env bash
# `warren worker` runs as warren-worker, the same command linked without libpq (a worker never
# talks to PostgreSQL; libpq brings GnuTLS, p11-kit, Kerberos and LDAP, about 3 MiB resident):
# warren-worker needs no libpq; `warren worker` execs it under the same pid, which then has no
# libpq mapped; run directly it takes the same options.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

wbin=$(dirname "$WARREN_BIN")/warren-worker
[ -x "$wbin" ] || fail "no $wbin beside $WARREN_BIN"
readelf -d "$wbin" >"$TEST_TMP/dynamic"
grep -q 'NEEDED.*librabbitmq' "$TEST_TMP/dynamic" || fail "readelf found no NEEDED entries: $(head -3 "$TEST_TMP/dynamic")"
if grep -q 'NEEDED.*libpq' "$TEST_TMP/dynamic"; then
    fail "warren-worker needs libpq: $(grep NEEDED "$TEST_TMP/dynamic" | tr -s ' ')"
fi
grep -q 'NEEDED.*libpq' < <(readelf -d "$WARREN_BIN") || fail "the warren binary no longer needs libpq?"

# A worker whose broker does not answer keeps trying: long enough to look at the process.
export WARREN__MESSAGE_QUEUE__RABBITMQ__URL=amqp://warren:x@127.0.0.1:1/
export WARREN__WORKER__HANDLERS_DIR=$WARREN_SOURCE_DIR/handlers
export WARREN__WORKER__HTTP_LISTEN=""
bg_start worker "$WARREN_BIN" worker --name binary-check
pid=$BG_PID
wait_until 10 "[ \"\$(readlink /proc/$pid/exe)\" = \"$(readlink -f "$wbin")\" ]"
assert_eq warren-worker "$(cat /proc/"$pid"/comm)" "the worker's process name"
if grep -q 'libpq' "/proc/$pid/maps"; then fail "the worker process has libpq mapped"; fi
log "worker pid $pid: $(grep VmRSS "/proc/$pid/status" | tr -s ' \t' ' ')"

assert_contains "$("$wbin" --help)" "usage: warren worker" "warren-worker --help"
rc=0
"$wbin" --name 'bad id!' >"$TEST_TMP/bad.out" 2>&1 || rc=$?
assert_eq 2 "$rc" "warren-worker with an invalid id"
pass
