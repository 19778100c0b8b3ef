#!/usr/bin/env bash
# database.url reaches libpq as written, TLS parameters included (docs/tls.md): the stack's
# PostgreSQL has no TLS, so sslmode=require must fail for that reason, with neither the password
# nor the key's passphrase in the error; sslmode=disable connects.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

url=$WARREN__DATABASE__URL
RUN_RC=0
WARREN__DATABASE__URL="$url?sslmode=require&sslpassword=hunter6&connect_timeout=5" "$WARREN_BIN" migrate \
    >"$TEST_TMP/require.log" 2>&1 || RUN_RC=$?
out=$(cat "$TEST_TMP/require.log")
assert_eq 1 "$RUN_RC" "migrate with sslmode=require against a server without TLS ($out)"
assert_contains "$out" "server does not support SSL, but SSL was required"
assert_not_contains "$out" "$WARREN_PG_PASSWORD" "migrate's error"
assert_not_contains "$out" "hunter6" "migrate's error"

WARREN__DATABASE__URL="$url?sslmode=disable" "$WARREN_BIN" migrate >"$TEST_TMP/disable.log" 2>&1 ||
    fail "migrate with sslmode=disable: $(cat "$TEST_TMP/disable.log")"
pass
