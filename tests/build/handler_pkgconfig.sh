#!/usr/bin/env bash
# The handler ABI is installed and self-contained: after `cmake --install` of the handler-dev
# component into a temporary prefix, handlers/example_upper.c builds into a module exporting
# the handler descriptor with nothing but `pkg-config --cflags warren-handler`, away from the
# source tree.
set -euo pipefail

src=${WARREN_SOURCE_DIR:?}
build=${WARREN_BUILD_DIR:?}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" --component handler-dev >"$tmp/install.log"
# Only the handler's own file travels: no -I into the source tree can help it.
mkdir "$tmp/handler"
cp "$src/handlers/example_upper.c" "$tmp/handler/"
cd "$tmp/handler"

export PKG_CONFIG_PATH="$tmp/prefix/share/pkgconfig"
unset PKG_CONFIG_LIBDIR
cflags=$(pkg-config --cflags warren-handler)
case "$cflags" in
    *"$tmp/prefix/"*) ;;
    *) echo "FAIL: pkg-config --cflags warren-handler gave '$cflags', not the prefix"; exit 1 ;;
esac
# shellcheck disable=SC2086 # cflags are words
"$cc" $cflags -std=c11 -Wall -Wextra -Werror -fPIC -shared -o example_upper.so example_upper.c
# The module exports the descriptor the worker looks up (WARREN_HANDLER_SYMBOL).
symbol=$(sed -nE 's/^#define WARREN_HANDLER_SYMBOL "([^"]+)".*/\1/p' \
    "$tmp/prefix/include/warren/handler.h")
nm -D --defined-only example_upper.so | grep -qw "$symbol" ||
    { echo "FAIL: example_upper.so does not export $symbol"; exit 1; }
echo "PASS: handler built against the installed warren-handler ($cflags)"
