#!/usr/bin/env bash
# `warren config check|docs`: exit codes, error messages naming file/line/key, docs kept in sync.
set -euo pipefail
bin=${WARREN_BIN:?} src=${WARREN_SOURCE_DIR:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Keep the caller's stack overrides out of the way: only this test's settings count.
for v in $(env | grep -o '^WARREN__[A-Z_]*' || true); do unset "$v"; done
unset WARREN_CONFIG

"$bin" config check -c "$src/conf/warren.conf" > "$tmp/out" || fail "shipped conf/warren.conf rejected"
grep -q '^worker.max_concurrency *= 16  # file$' "$tmp/out" || fail "source 'file' not shown"
grep -q 'amqp://guest:\*\*\*\*@' "$tmp/out" || fail "AMQP password not masked"

WARREN__WORKER__MAX_CONCURRENCY=7 "$bin" config check > "$tmp/out"
grep -q '^worker.max_concurrency *= 7  # env WARREN__WORKER__MAX_CONCURRENCY$' "$tmp/out" || fail "env source"

expect_exit2() { # FILE-TEXT EXPECTED-FRAGMENT...
    printf '%b' "$1" > "$tmp/bad.conf"; shift
    set +e; "$bin" config check -c "$tmp/bad.conf" > /dev/null 2> "$tmp/err"; rc=$?; set -e
    [ "$rc" = 2 ] || fail "exit $rc, want 2 for $(cat "$tmp/bad.conf")"
    for f in "$@"; do grep -qF -- "$f" "$tmp/err" || fail "stderr lacks '$f': $(cat "$tmp/err")"; done
}
expect_exit2 'log = {\n  colour = true; };\n' "$tmp/bad.conf:2:" "log.colour" "unknown key"
expect_exit2 'worker = { max_concurrency = "x"; };\n' "worker.max_concurrency" "expected an integer"
expect_exit2 'worker = { max_concurrency = 0; };\n' "out of bounds"
expect_exit2 'log = {\n\n level = = 1; };\n' "$tmp/bad.conf:3:" "malformed"

set +e; "$bin" config check -c "$tmp/missing.conf" 2> "$tmp/err"; rc=$?; set -e
{ [ "$rc" = 2 ] && grep -q 'missing.conf: cannot read' "$tmp/err"; } || fail "unreadable file: rc=$rc"
set +e; "$bin" config check -c "$tmp" 2> "$tmp/err"; rc=$?; set -e
{ [ "$rc" = 2 ] && grep -qF "$tmp: is a directory, not a configuration file" "$tmp/err"; } ||
    fail "directory as config file: rc=$rc $(cat "$tmp/err")"

# Integers of 2^31 and more in the file are read whole, not wrapped by libconfig.
expect_exit2 'executor = { batch_size = 4294967396; };\n' "executor.batch_size: 4294967396 is out of bounds"
expect_exit2 'worker = { max_concurrency = 4294967297; };\n' "worker.max_concurrency: 4294967297 is out of bounds"
expect_exit2 'executor = { batch_size = 99999999999; };\n' "executor.batch_size: 99999999999 is out of bounds"
# dead_letter.ttl_ms is stored in 64 bits: its 30-day maximum survives.
WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__TTL_MS=2592000000 "$bin" config check > "$tmp/out"
grep -q '^message_queue.rabbitmq.dead_letter.ttl_ms *= 2592000000 ' "$tmp/out" || fail "ttl_ms above INT_MAX"

# Every form of password is masked.
WARREN__DATABASE__URL='postgresql://u:hunter1@h/db?sslmode=disable&password=hunter2' \
    WARREN__MESSAGE_QUEUE__RABBITMQ__URL='amqps://app:hunter3@mq/%2f' "$bin" config check > "$tmp/out"
! grep -q hunter "$tmp/out" || fail "a password shown by config check: $(grep hunter "$tmp/out")"
grep -qF '"postgresql://u:****@h/db?sslmode=disable&password=****"' "$tmp/out" || fail "database URL masking"
grep -qF '"amqps://app:****@mq/%2f"' "$tmp/out" || fail "amqps URL masking"
# libpq's TLS parameters stay readable; the key's passphrase does not.
WARREN__DATABASE__URL='postgresql://u:hunter4@db/w?sslmode=verify-full&sslrootcert=/ca.pem&sslpassword=hunter5' \
    "$bin" config check > "$tmp/out"
! grep -q hunter "$tmp/out" || fail "a password shown by config check: $(grep hunter "$tmp/out")"
grep -qF '"postgresql://u:****@db/w?sslmode=verify-full&sslrootcert=/ca.pem&sslpassword=****"' "$tmp/out" ||
    fail "database URL with TLS parameters: $(grep '^database.url' "$tmp/out")"
set +e; WARREN__LOG__LEVL=info "$bin" config check 2> "$tmp/err"; rc=$?; set -e
{ [ "$rc" = 2 ] && grep -q 'WARREN__LOG__LEVL: unknown key' "$tmp/err"; } || fail "unknown env key: rc=$rc"
set +e; "$bin" config bogus 2>/dev/null; rc=$?; set -e
[ "$rc" = 2 ] || fail "usage error exit $rc"

"$bin" config docs > "$tmp/configuration.md"
diff -u "$src/docs/configuration.md" "$tmp/configuration.md" \
    || fail "docs/configuration.md is stale: run 'warren config docs > docs/configuration.md'"
echo "PASS: config_cli"
