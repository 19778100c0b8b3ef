#!/usr/bin/env bash
# Link boundaries hold, read from the static libraries with nm: each module resolves its undefined
# symbols only in itself, in the modules its warren_module() line in CMakeLists.txt declares, or
# outside warren (libc, librabbitmq, libpq, json-c, libevent, libconfig, OpenSSL: a symbol no
# module defines); what it takes from another module is named in include/warren/*.h; the
# functions a public header declares live in a module that every module including it declares;
# no symbol is defined by two modules. Then it runs again on doctored declarations, headers and
# includes, and expects each rule to fail.
#
# usage: module_links.sh [--decls FILE] [--include DIR] [--includer MODULE:HEADER]...
#                        [--no-self-test]
#   --decls         the warren_module() lines from FILE instead of CMakeLists.txt
#   --include       the public headers from DIR instead of include/warren/
#   --includer      MODULE counts as including warren/HEADER, as if one of its sources did
#   --no-self-test  check only
set -euo pipefail
export LC_ALL=C
started=$(date +%s%N)

src=${WARREN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${WARREN_BUILD_DIR:-$src/build}
decls_file=$src/CMakeLists.txt
include_dir=$src/include/warren
extra_includers=()
self_test=1
usage="usage: $0 [--decls FILE] [--include DIR] [--includer MODULE:HEADER]... [--no-self-test]"
while [ $# -gt 0 ]; do
    case $1 in
    --decls) decls_file=$2; shift 2 ;;
    --include) include_dir=$2; shift 2 ;;
    --includer) extra_includers+=("$2"); shift 2 ;;
    --no-self-test) self_test=0; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "MODULE DEP" per declared dependency and "MODULE MODULE" per module, from the lines that start
# with warren_module(NAME DEPS...) (comments dropped).
declarations() {
    sed -E 's/#.*//' "$1" | awk '
        /^[[:space:]]*warren_module\(/ {
            line = $0; sub(/^[[:space:]]*warren_module\(/, "", line); sub(/\).*/, "", line)
            n = split(line, w, " "); print w[1], w[1]
            for (i = 2; i <= n; i++) print w[1], w[i]
        }' | sort -u
}

declarations "$src/CMakeLists.txt" >"$tmp/real_decls"
read -r -a modules <<<"$(awk '$1 == $2 { print $1 }' "$tmp/real_decls" | paste -sd' ')"
[ ${#modules[@]} -gt 1 ] || { echo "FAIL: no modules in $src/CMakeLists.txt"; exit 1; }
words() { tr ' ' '\n' <<<"$*" | sort | paste -sd' '; }
if [ -n "${WARREN_MODULES:-}" ] && [ "$(words "$WARREN_MODULES")" != "$(words "${modules[*]}")" ]
then
    echo "FAIL: CMake's modules ($WARREN_MODULES) are not the warren_module() lines (${modules[*]})"
    exit 1
fi

# "SYMBOL MODULE" for what each module defines, "MODULE SYMBOL" for what it leaves undefined:
# its library, and for cli also the entry points built beside it (src/main.c, src/worker_main.c).
: >"$tmp/defs"
: >"$tmp/undefs"
for m in "${modules[@]}"; do
    objs=("$build/libwarren_$m.a")
    [ -f "${objs[0]}" ] || { echo "FAIL: no ${objs[0]}: build first"; exit 1; }
    if [ "$m" = cli ]; then
        while IFS= read -r o; do objs+=("$o"); done < <(find "$build/CMakeFiles" \
            -path '*/warren.dir/src/main.c.o' -o -path '*/warren-worker.dir/src/worker_main.c.o')
    fi
    nm -g --defined-only "${objs[@]}" 2>/dev/null |
        awk -v m="$m" 'NF == 3 { print $3, m }' >>"$tmp/defs"
    nm -u "${objs[@]}" 2>/dev/null | awk -v m="$m" 'NF == 2 { print m, $2 }' >>"$tmp/undefs"
done
sort -u -o "$tmp/defs" "$tmp/defs"
# "MODULE SYMBOL DEFINER": every symbol a module takes from another module.
sort -u "$tmp/undefs" | sort -k2,2 | join -1 2 -2 1 -o 1.1,0,2.2 - "$tmp/defs" |
    awk '$1 != $3' | sort -u >"$tmp/uses"

# The names in the code of the public headers in DIR (comments and string literals dropped):
# $tmp/pub has every identifier (the public rule), $tmp/funcs "HEADER NAME" for each one
# followed by "(", declared or called as a function (the home rule). Read once per DIR.
header_names() {
    [ "$1" != "${names_of:-}" ] || return 0
    names_of=$1
    local h
    for h in "$1"/*.h "$1"/*.h.in; do
        [ -e "$h" ] || continue
        echo "#define MODULE_LINKS_HEADER $(basename "$h" .in)"
        cat "$h"
        echo
    done | gcc -fpreprocessed -dD -E -P -x c - 2>/dev/null | grep -v '^#include' |
        sed -E 's/"([^"\\]|\\.)*"//g' | awk '
            /^#define MODULE_LINKS_HEADER / { h = $3; next }
            {   line = $0
                while (match(line, /[A-Za-z_][A-Za-z0-9_]*/)) {
                    name = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
                    print "name", name
                    if (line ~ /^[[:space:]]*\(/) print "func", h, name
                } }' >"$tmp/names"
    awk '$1 == "name" { print $2 }' "$tmp/names" | sort -u >"$tmp/pub"
    awk '$1 == "func" { print $2, $3 }' "$tmp/names" | sort -u | sort -k2,2 >"$tmp/funcs"
}

# "HEADER MODULE" for each public header a module's sources include (src/main.c and
# src/worker_main.c are cli's), the MODULE:HEADER arguments, and the headers those include in
# turn (read from DIR).
includers() {
    local dir=$1 p
    shift
    {
        (cd "$src/src" && grep -rHoE '^#include "warren/[A-Za-z0-9_]+\.h"' --include='*.[ch]' .) |
            sed -E 's#^\./##; s#^(worker_)?main\.c:#cli/x:#' |
            sed -E 's#^([^/]+)/[^:]*:\#include "warren/(.*)"$#\2 \1#'
        for p in "$@"; do echo "${p#*:} ${p%%:*}"; done
        (cd "$dir" && grep -HoE '^#include "warren/[A-Za-z0-9_]+\.h"' ./*.h ./*.h.in 2>/dev/null) |
            sed -E 's#^\./##; s#\.in:#:#; s#^([^:]*):\#include "warren/(.*)"$#include \1 \2#'
    } | awk '$1 == "include" { inc[$2] = inc[$2] " " $3; next } { pair[$1 " " $2] = 1 }
        END {
            do { added = 0
                for (k in pair) { split(k, p, " "); n = split(inc[p[1]], g, " ")
                    for (i = 1; i <= n; i++) if (!((g[i] " " p[2]) in pair)) {
                        pair[g[i] " " p[2]] = 1; added = 1 } }
            } while (added)
            for (k in pair) print k }' | sort -u
}

# check DECLS DIR [MODULE:HEADER...]: one line per finding ("FAIL: ...") or note.
check() {
    local decls=$1 dir=$2
    shift 2
    declarations "$decls" >"$tmp/decls"
    header_names "$dir"
    includers "$dir" "$@" >"$tmp/includers"

    # One definition per symbol: the linker would take the first archive's silently.
    awk '{ n[$1]++; d[$1] = d[$1] " " $2 } END { for (s in n) if (n[s] > 1)
        print "FAIL: " s " is defined by several modules:" d[s] }' "$tmp/defs" | sort

    # Declared: a symbol of another module is reached only through a declared dependency.
    awk 'NR == FNR { ok[$1 " " $2] = 1; next }
        !(($1 " " $3) in ok) { s[$1 " " $3] = s[$1 " " $3] " " $2 }
        END { for (k in s) { split(k, p, " ")
            print "FAIL: " p[1] " calls " p[2] " (" substr(s[k], 2) ") but warren_module(" \
                p[1] ") does not declare " p[2] } }' "$tmp/decls" "$tmp/uses" | sort

    # Public: what crosses a boundary is named in include/warren/.
    sort -k2,2 "$tmp/uses" | join -1 2 -2 1 -v 1 -o 1.1,0,1.3 - "$tmp/pub" | awk '{
        print "FAIL: " $1 " calls " $2 ", internal to " $3 " (no include/warren/ header has it)" }'

    # Home: a public header's functions are defined where every module including it can link;
    # the message names the modules that every includer is or declares.
    join -1 2 -2 1 -o 1.1,0,2.2 "$tmp/funcs" "$tmp/defs" | sort -u >"$tmp/homes"
    awk 'FILENAME == ARGV[1] { ok[$1 " " $2] = 1; all[$1] = all[$1] " " $2; next }
        FILENAME == ARGV[2] { inc[$1] = inc[$1] " " $2; next }
        {   n = split(inc[$1], us, " ")
            for (i = 1; i <= n; i++) if (!((us[i] " " $3) in ok)) {
                k = $1 " " us[i] " " $3; f[k] = f[k] " " $2; users[k] = inc[$1] } }
        END { for (k in f) { split(k, p, " ")
            n = split(users[k], us, " "); split(all[us[1]], c, " "); cand = ""
            for (j in c) { good = 1
                for (i = 1; i <= n; i++) if (!((us[i] " " c[j]) in ok)) good = 0
                if (good) cand = cand " " c[j] }
            print "FAIL: warren/" p[1] " is included by " p[2] ", which does not declare " \
                p[3] ", where its" f[k] " live; a home every includer declares:" cand } }' \
        "$tmp/decls" "$tmp/includers" "$tmp/homes" | sort

    # Declared and unused: a note, not a failure.
    awk 'NR == FNR { used[$1 " " $3] = 1; next } $1 != $2 && !(($1 " " $2) in used) {
        print "note: " $1 " declares " $2 " and takes nothing from it" }' "$tmp/uses" "$tmp/decls"
}

check "$decls_file" "$include_dir" ${extra_includers[@]+"${extra_includers[@]}"} >"$tmp/findings"
cat "$tmp/findings"
failures=$(grep -c '^FAIL' "$tmp/findings" || true)
echo "$(wc -l <"$tmp/uses") references across ${#modules[@]} modules checked in" \
    "$((($(date +%s%N) - started) / 1000000)) ms: $failures findings"
[ "$failures" -eq 0 ] || exit 1
[ "$self_test" = 1 ] || exit 0

# Self-test: each rule fails on inputs doctored from the real ones.
selftest_failures=0
expect() { # expect WHAT PATTERN DECLS DIR [MODULE:HEADER...]
    local what=$1 pattern=$2
    shift 2
    check "$@" >"$tmp/doctored_findings"
    if grep -qE "$pattern" "$tmp/doctored_findings"; then
        echo "self-test: $what: fails as it should"
    else
        echo "FAIL: self-test: $what passes (expected /$pattern/)"
        selftest_failures=$((selftest_failures + 1))
    fi
}
real_include=$src/include/warren

# An undeclared module: one dependency that is used, dropped from its declaration.
read -r um _ ud < <(head -1 "$tmp/uses")
sed -E "s/^([[:space:]]*warren_module\\($um( [a-z0-9_]+)*) $ud\\b/\\1/" "$src/CMakeLists.txt" \
    >"$tmp/doctored_decls"
expect "$um without $ud declared" "^FAIL: $um calls $ud " "$tmp/doctored_decls" "$real_include"

# A non-public call: a symbol that crosses a boundary, renamed in every public header.
read -r pm ps pd < <(tail -1 "$tmp/uses")
mkdir "$tmp/doctored_include"
for h in "$real_include"/*; do
    sed -E "s/\\b$ps\\b/${ps}_doctored/g" "$h" >"$tmp/doctored_include/${h##*/}"
done
expect "$ps of $pd missing from include/warren/" "^FAIL: $pm calls $ps, internal to $pd" \
    "$src/CMakeLists.txt" "$tmp/doctored_include"

# A header out of reach: a module that declares nothing includes a header whose functions live
# in another module.
base=$(awk '{ n[$1]++ } END { for (m in n) if (n[m] == 1) print m }' "$tmp/real_decls" | head -1)
read -r hh _ hd < <(awk -v b="$base" '$3 != b' "$tmp/homes" | head -1)
expect "$base including $hh of $hd" \
    "^FAIL: warren/$hh is included by $base, which does not declare $hd" \
    "$src/CMakeLists.txt" "$real_include" "$base:$hh"

# Two definitions: a symbol of one module defined by another as well.
read -r ds dm < <(head -1 "$tmp/defs")
other=${modules[0]}
[ "$dm" != "$other" ] || other=${modules[1]}
cp "$tmp/defs" "$tmp/defs.real"
echo "$ds $other" >>"$tmp/defs"
sort -o "$tmp/defs" "$tmp/defs"
expect "$ds in $dm and $other" "^FAIL: $ds is defined by several modules" \
    "$src/CMakeLists.txt" "$real_include"
mv "$tmp/defs.real" "$tmp/defs"
[ "$selftest_failures" -eq 0 ]
