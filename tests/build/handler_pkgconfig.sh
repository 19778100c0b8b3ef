#!/usr/bin/env bash
# The handler ABI is installed and self-contained: after `cmake --install` of the handler-dev
# component into a temporary prefix, handlers/example_upper.c (ABI version 2) and
# tests/handlers/test_v1.c (a version 1 source, which must keep building) build into modules
# exporting their handler descriptors with nothing but `pkg-config --cflags warren-handler`, away
# from the source tree.
set -euo pipefail

src=${WARREN_SOURCE_DIR:?}
build=${WARREN_BUILD_DIR:?}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" --component handler-dev >"$tmp/install.log"
# Only the handler's own file travels: no -I into the source tree can help it.
mkdir "$tmp/handler"
cp "$src/handlers/example_upper.c" "$src/tests/handlers/test_v1.c" "$tmp/handler/"
cd "$tmp/handler"

export PKG_CONFIG_PATH="$tmp/prefix/share/pkgconfig"
unset PKG_CONFIG_LIBDIR
cflags=$(pkg-config --cflags warren-handler)
case "$cflags" in
    *"$tmp/prefix/"*) ;;
    *) echo "FAIL: pkg-config --cflags warren-handler gave '$cflags', not the prefix"; exit 1 ;;
esac
# build NAME SYMBOL_MACRO: NAME.c into NAME.so, which must export the descriptor the worker looks
# up (the value of SYMBOL_MACRO in the installed header).
build() {
    local symbol
    # shellcheck disable=SC2086 # cflags are words
    "$cc" $cflags -std=c11 -Wall -Wextra -Werror -fPIC -shared -o "$1.so" "$1.c"
    symbol=$(sed -nE "s/^#define $2 \"([^\"]+)\".*/\\1/p" "$tmp/prefix/include/warren/handler.h")
    [ -n "$symbol" ] || { echo "FAIL: no $2 in the installed handler.h"; exit 1; }
    nm -D --defined-only "$1.so" | grep -qw "$symbol" ||
        { echo "FAIL: $1.so does not export $symbol"; exit 1; }
}
build example_upper WARREN_HANDLER_SYMBOL_V2
build test_v1 WARREN_HANDLER_SYMBOL
echo "PASS: handlers of ABI versions 2 and 1 built against the installed warren-handler ($cflags)"
