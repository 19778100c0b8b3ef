#!/usr/bin/env bash
# The binary finds its handlers and schema from where it runs, never from a path compiled in:
# build/warren uses the build tree's handlers (the checkout's, linked, plus the C handlers) and
# the checkout's schema; an install under any prefix, moved elsewhere afterwards, uses its own
# PREFIX/libexec/warren/handlers and PREFIX/share/warren/schema; no string in the binary names
# the source tree.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/deploy.sh"

# handlers_of BIN: the handlers directory BIN resolves for worker.handlers_dir = "".
handlers_of() { env -i PATH="$PATH" "$1" config check | awk '$1 == "worker.handlers_dir" {print $3}' | tr -d '"'; }
# schema_of BIN: the migrations directory BIN uses without --dir and $WARREN_SCHEMA_DIR (its
# --help names it).
schema_of() { env -i PATH="$PATH" "$1" migrate --help | tr -s ' \n' ' ' | sed -n 's/.*else \([^)]*\)).*/\1/p'; }

build_handlers=$(handlers_of "$WARREN_BUILD_DIR/warren")
assert_eq "$WARREN_BUILD_DIR/handlers" "$build_handlers" "handlers of the build tree's binary"
for h in core.echo core.sleep core.fail; do
    assert_eq "$WARREN_SOURCE_DIR/handlers/$h" "$(readlink -f "$build_handlers/$h")" "$h is the checkout's"
done
[ -f "$build_handlers/example_upper.so" ] || fail "the C handler is not in $build_handlers"
assert_eq "$WARREN_BUILD_DIR/schema" "$(schema_of "$WARREN_BUILD_DIR/warren")" "schema of the build tree's binary"
assert_eq "$WARREN_SOURCE_DIR/schema" "$(readlink -f "$WARREN_BUILD_DIR/schema")" "which is the checkout's"

cmake --install "$WARREN_BUILD_DIR" --prefix "$TEST_TMP/first" >"$TEST_TMP/install.log"
mv "$TEST_TMP/first" "$TEST_TMP/moved"
prefix=$TEST_TMP/moved
assert_eq "$prefix/libexec/warren/handlers" "$(handlers_of "$prefix/bin/warren")" "handlers of a moved install"
[ -x "$prefix/bin/warren-worker" ] || fail "warren-worker not installed beside warren"
for h in core.echo core.sleep core.fail example_upper.so; do
    [ -f "$prefix/libexec/warren/handlers/$h" ] || fail "$h not installed"
done
assert_eq "$prefix/share/warren/schema" "$(schema_of "$prefix/bin/warren")" "schema of a moved install"
ls "$prefix/share/warren/schema/"*.sql >/dev/null || fail "no schema installed"
ls "$prefix/share/warren/schema/functions/"*.sql >/dev/null || fail "no definitions installed"
[ -f "$prefix/share/warren/schema/superseded.sha256" ] || fail "no superseded.sha256 installed"
[ -f "$prefix/etc/warren/warren.conf" ] || fail "warren.conf not installed under the prefix"
assert_eq "$prefix/libexec/warren/handlers" \
    "$(WARREN_BIN=$prefix/bin/warren conf_value worker.handlers_dir "$prefix/etc/warren/warren.conf")" \
    "the installed config leaves handlers_dir to the binary"

# Read-only data of the binary: a compiled-in source path would be there. A sanitizer build
# keeps every source file's path there for its reports (UBSan's source locations, which
# -ffile-prefix-map does not rewrite), so the check belongs to the plain build only; the lookups
# above ran in both.
if grep -q '^WARREN_SANITIZE:BOOL=ON$' "$WARREN_BUILD_DIR/CMakeCache.txt"; then
    echo "relocatable: sanitizer build, read-only data not checked"
else
    objcopy -O binary --only-section=.rodata "$prefix/bin/warren" "$TEST_TMP/rodata"
    if grep -aqF "$WARREN_SOURCE_DIR" "$TEST_TMP/rodata"; then
        fail "the binary's read-only data names the source tree $WARREN_SOURCE_DIR"
    fi
fi
pass
