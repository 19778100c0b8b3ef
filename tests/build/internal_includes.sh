#!/usr/bin/env bash
# Module boundaries hold: a module's internal headers (src/MODULE/*.h) compile with that
# module's own compile command and fail with every other module's; each include/warren/ header
# compiles on its own and is included by two modules or more; no source reaches another module
# by path.
set -euo pipefail

src=${WARREN_SOURCE_DIR:?}
build=${WARREN_BUILD_DIR:?}
read -r -a modules <<<"${WARREN_MODULES:?}"
commands="$build/compile_commands.json"
[ -f "$commands" ] || { echo "FAIL: no $commands (CMAKE_EXPORT_COMPILE_COMMANDS)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# compile MODULE TEXT: compile TEXT as a source of MODULE, with the exact command the build
# uses for that module's first source (syntax only). Output in $tmp/out.
compile() {
    local module=$1 text=$2 entry dir cmd
    printf '%s\n' "$text" >"$tmp/probe.c"
    entry=$(jq -r --arg d "$src/src/$module/" \
        'first(.[] | select(.file | startswith($d))) | "\(.directory)\t\(.command)"' "$commands")
    dir=${entry%%$'\t'*}
    cmd=$(sed -E "s# -o [^ ]+# -o /dev/null#; s# -c [^ ]+\$# -fsyntax-only -c $tmp/probe.c#" \
        <<<"${entry#*$'\t'}")
    (cd "$dir" && eval "$cmd") >"$tmp/out" 2>&1
}

for m in "${modules[@]}"; do
    for n in "${modules[@]}"; do
        for h in "$src/src/$n"/*.h; do
            [ -e "$h" ] || continue
            inc="$n/$(basename "$h")"
            if [ "$m" = "$n" ]; then
                compile "$m" "#include \"$inc\"" || fail "$m cannot include its own $inc: $(cat "$tmp/out")"
            elif compile "$m" "#include \"$inc\""; then
                fail "$m can include $inc, internal to $n"
            elif ! grep -q "$inc: No such file or directory" "$tmp/out"; then
                fail "including $inc from $m failed for another reason: $(cat "$tmp/out")"
            fi
        done
    done
done

# Public headers stand alone, and cross a boundary: two modules or more include each
# (handler.h: the worker and third-party handlers). Each compiles alone with the flags of the
# first module that uses it (common for handler.h), so warren/db.h sees libpq's headers, which
# only the modules linking libpq have on their path.
for h in "$src"/include/warren/*.h "$src"/include/warren/*.h.in; do
    [ -e "$h" ] || continue
    name=$(basename "$h" .in)
    users=$(grep -rlE "^#include \"warren/$name\"" "$src/src" |
        sed -E "s#^$src/src/##; s#^(worker_)?main\\.c\$#cli/#; s#/.*##" | sort -u | paste -sd' ')
    first=common
    for m in "${modules[@]}"; do
        [[ " $users " == *" $m "* ]] && { first=$m; break; }
    done
    compile "$first" "#include \"warren/$name\"" || fail "warren/$name does not compile alone: $(cat "$tmp/out")"
    [ "$name" = handler.h ] && continue
    [ "$(wc -w <<<"$users")" -ge 2 ] ||
        fail "include/warren/$name is included by ${users:-no module} only: move it into that module"
done

# By path: a module's files include "warren/..." or "MODULE/..." (main.c, worker_main.c: the
# CLI's), and
# public headers only "warren/...". No "../" escapes.
while IFS=: read -r file line; do
    rel=${file#"$src/"}
    case "$rel" in
        src/main.c | src/worker_main.c) own=cli ;;
        src/*) own=${rel#src/}; own=${own%%/*} ;;
        include/*) own=warren ;;
    esac
    inc=$(sed -E 's/^#include "([^"]*)".*/\1/' <<<"$line")
    case "$inc" in
        warren/* | "$own"/*) [[ "$inc" != *..* ]] || fail "$rel includes \"$inc\"" ;;
        *) fail "$rel includes \"$inc\": not its own module's nor a public header" ;;
    esac
done < <(grep -rnE '^#include "' "$src/src" "$src/include" --include='*.c' --include='*.h' |
    sed -E 's/^([^:]*):[0-9]+:/\1:/')

if [ "$failures" -gt 0 ]; then
    echo "FAIL: $failures module boundary problem(s)"
    exit 1
fi
echo "PASS: module boundaries (${modules[*]})"
