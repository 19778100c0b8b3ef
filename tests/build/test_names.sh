#!/usr/bin/env bash
# Every integration test is named AREA_BEHAVIOUR.sh (docs/style.md, "Tests"): AREA one of the
# areas of the table "Integration test areas" in docs/style.md, the one list of them, and
# BEHAVIOUR one or more lower-case words joined by "_". A test of an unlisted area, a name
# without a behaviour part, or an area in the table that no test uses fails, naming what to
# rename or which row to add or delete.
set -euo pipefail

src=${WARREN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
doc=docs/style.md
[ -f "$src/$doc" ] || { echo "FAIL: no $doc"; exit 1; }
export LC_ALL=C

# The areas: the first cell of each row under "### Integration test areas", up to the next heading.
mapfile -t areas < <(awk '
    /^#/ { in_areas = ($0 ~ /^### Integration test areas[[:space:]]*$/); next }
    in_areas && /^\| `[a-z0-9]+` \|/ { split($0, c, "`"); print c[2] }
' "$src/$doc")
[ ${#areas[@]} -gt 0 ] || { echo "FAIL: no area rows under \"### Integration test areas\" in $doc"; exit 1; }
re="^($(IFS='|'; echo "${areas[*]}"))_[a-z0-9]+(_[a-z0-9]+)*\$"

failures=0
declare -A used=()
tests=0
for f in "$src"/tests/integration/*.sh; do
    name=$(basename "$f" .sh)
    tests=$((tests + 1))
    if [[ "$name" =~ $re ]]; then
        used[${BASH_REMATCH[1]}]=1
    else
        echo "tests/integration/$name.sh: not AREA_BEHAVIOUR with an area of $doc (${areas[*]}):" \
            "git mv it to AREA_BEHAVIOUR.sh, or add its area to the table"
        failures=$((failures + 1))
    fi
done
for a in "${areas[@]}"; do
    [ -n "${used[$a]:-}" ] && continue
    echo "$doc: area \`$a\` has no test in tests/integration/: delete its row"
    failures=$((failures + 1))
done

if [ "$failures" -gt 0 ]; then
    echo "FAIL: test_names: $failures problem(s)"
    exit 1
fi
echo "PASS: test_names ($tests tests, ${#areas[@]} areas)"
