#!/usr/bin/env bash
# Every path a source file, comment or document cites under src/, include/, tests/, docs/,
# schema/ or scripts/ exists, so citations cannot rot when files move. Not checked: globs and
# brace lists (tests/unit/test_*.c), placeholders in capitals (src/MODULE/,
# tests/unit/test_NAME.c) and paths that continue another one ($src/docs/..., http://h/docs/...).
set -euo pipefail

src=${WARREN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$src"
export LC_ALL=C

# The files to read: what git tracks (and untracked files it does not ignore), else everything
# but build and stack directories.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard | sort -u)
else
    mapfile -t files < <(find . -type f ! -path './build*' ! -path './.stack/*' ! -path './.git/*' \
        ! -path './.bench/*' ! -path './.demo/*' | sed 's#^\./##' | sort)
fi

# "FILE:LINE:PATH:NEXT" for every citation; NEXT is the character after it ("" at line end).
# The character before a citation may not continue a path or a word.
cites=$(for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    case "$f" in *.png | *.dat) continue ;; esac
    grep -InoE '(^|[^A-Za-z0-9_$./{~-])(src|include|tests|docs|schema|scripts)/[A-Za-z0-9_./-]*[A-Za-z0-9_/].?' \
        "$f" /dev/null || true
done)

failures=0
checked=0
while IFS=: read -r file line match; do
    [ -n "$file" ] || continue
    # Drop the leading character (when there is one) and split off the next one.
    path=$(sed -E 's#^[^a-z]?((src|include|tests|docs|schema|scripts)/.*)$#\1#' <<<"$match")
    next=
    if [[ ! "${path: -1}" =~ [A-Za-z0-9_/] ]]; then
        next=${path: -1}
        path=${path%?}
    fi
    case "$next" in '*' | '{' | '<' | '$' | '[') continue ;; esac
    # A component in capitals (NAME, MODULE, NNN_x.sql) is a placeholder; README.md is not.
    if grep -qE '(^|[/_])[A-Z][A-Z0-9]+([_./]|$)' <<<"$path" &&
        ! grep -qE '(^|/)(README|LICENSE|CHANGELOG)(\.|$)' <<<"$path"; then
        continue
    fi
    checked=$((checked + 1))
    if [ ! -e "$path" ]; then
        echo "FAIL: $file:$line cites $path, which does not exist"
        failures=$((failures + 1))
    fi
done <<<"$cites"

if [ "$failures" -gt 0 ]; then
    echo "FAIL: cited_paths: $failures citation(s) of paths that do not exist (fix the path, or"
    echo "      the citation when the file was moved or removed)"
    exit 1
fi
echo "PASS: cited_paths ($checked citations)"
