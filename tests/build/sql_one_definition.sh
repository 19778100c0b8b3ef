#!/usr/bin/env bash
# One home for each SQL function, view and trigger (docs/schema.md, "Definitions"):
# - every name that a CREATE [OR REPLACE] FUNCTION, PROCEDURE, AGGREGATE, [MATERIALIZED] VIEW or
#   [CONSTRAINT] TRIGGER statement under schema/ defines is defined once, in one file;
# - a definition file (schema/functions/) creates with OR REPLACE, so applying it again is a
#   no-op for what did not change;
# - a numbered migration (schema/NNN_*.sql) defines nothing of the kind, but a temporary helper
#   (pg_temp.NAME) or an object marked `-- table-level:` in the comment above it (a function an index
#   depends on, which must exist when that migration runs and changes only by a new migration).
# - every CURRENT checksum of schema/superseded.sha256 (RECORDED  CURRENT  FILE) is FILE's, so an
#   edit of a migration that databases applied cannot slip past the list (docs/schema.md).
# The check then proves it fails on a copy of schema/ with each rule broken once.
set -euo pipefail

src=${WARREN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export LC_ALL=C

# check DIR: the rules above over the schema directory DIR; prints each breach, fails on any.
check() {
    local dir=$1
    (cd "$dir" && find . -name '*.sql' | sed 's#^\./##' | sort) | while read -r f; do
        awk -v file="$f" '
            BEGIN { IGNORECASE = 1 }
            {
                line = $0
                if (match(toupper(line), /^[ \t]*CREATE[ \t]+(OR[ \t]+REPLACE[ \t]+)?(FUNCTION|PROCEDURE|AGGREGATE|VIEW|MATERIALIZED[ \t]+VIEW|TRIGGER|CONSTRAINT[ \t]+TRIGGER)[ \t]+/)) {
                    head = substr(line, 1, RLENGTH)
                    rest = substr(line, RLENGTH + 1)
                    name = rest
                    sub(/[^A-Za-z0-9_."].*$/, "", name)
                    name = tolower(name)
                    gsub(/"/, "", name)
                    sub(/^public\./, "", name)
                    replace = (toupper(head) ~ /OR[ \t]+REPLACE/)
                    printf "%s\t%d\t%s\t%d\t%d\n", file, NR, name, replace, marked
                }
                # The comment block right above a statement may mark it table-level.
                if (line ~ /^[ \t]*--/) { if (line ~ /^[ \t]*--[ \t]*table-level:/) marked = 1 }
                else marked = 0
            }' "$dir/$f"
    done | awk -F'\t' '
        {
            where = $1 ":" $2
            defs[$3] = defs[$3] (defs[$3] == "" ? "" : ", ") where
            count[$3]++
            if ($1 ~ /^functions\//) {
                if ($4 != 1) { print where ": " $3 ": a definition file creates with OR REPLACE"; bad = 1 }
            } else if ($3 !~ /^pg_temp\./ && $5 != 1) {
                print where ": " $3 ": defined in a numbered migration; its home is schema/functions/ (or mark it -- table-level: WHY)"
                bad = 1
            }
        }
        END {
            for (n in count) if (count[n] > 1) { print n ": defined " count[n] " times: " defs[n]; bad = 1 }
            if (NR == 0) { print "no definitions found"; bad = 1 }
            exit bad
        }'
}

# superseded DIR: each CURRENT of DIR/superseded.sha256 is its file's sha256.
superseded() {
    local recorded current file bad=0
    [ -f "$1/superseded.sha256" ] || return 0
    while read -r recorded current file; do
        [[ $recorded == \#* || -z $recorded ]] && continue
        if [ ! -f "$1/$file" ]; then
            echo "superseded.sha256 names $file, which does not exist"
            bad=1
        elif [ "$(sha256sum "$1/$file" | cut -d' ' -f1)" != "$current" ]; then
            echo "$file: changed since superseded.sha256 listed it (CURRENT $current): add a line"
            bad=1
        fi
    done <"$1/superseded.sha256"
    return $bad
}

# must_fail WHAT DIR: check DIR must fail and say WHAT.
must_fail() {
    local out
    if out=$(check "$2" 2>&1); then
        echo "FAIL: the check passed a schema with $1" >&2
        exit 1
    fi
    grep -q -- "$3" <<<"$out" || { echo "FAIL: $1: no '$3' in: $out" >&2; exit 1; }
}

start=$(date +%s%N)
if ! out=$(superseded "$src/schema"); then
    echo "FAIL: $out" >&2
    exit 1
fi
if ! out=$(check "$src/schema"); then
    echo "FAIL: schema/ breaks the one-definition rule:" >&2
    echo "$out" >&2
    exit 1
fi
n=$(grep -rhicE '^[[:space:]]*CREATE[[:space:]]+(OR[[:space:]]+REPLACE[[:space:]]+)?(FUNCTION|VIEW|TRIGGER)' \
    "$src/schema" | awk '{ s += $1 } END { print s }')
ms=$((($(date +%s%N) - start) / 1000000))

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh_copy() { rm -rf "$tmp/schema" && cp -r "$src/schema" "$tmp/schema"; }

fresh_copy
printf 'CREATE OR REPLACE FUNCTION warren_dl_item(d dead_letters) RETURNS jsonb\nLANGUAGE sql AS $$ SELECT NULL::jsonb $$;\n' \
    >"$tmp/schema/functions/999_duplicate.sql"
must_fail "a function defined in two files" "$tmp/schema" "warren_dl_item: defined 2 times"

fresh_copy
printf 'CREATE FUNCTION warren_it_new() RETURNS int\nLANGUAGE sql AS $$ SELECT 1 $$;\n' >"$tmp/schema/999_new.sql"
must_fail "a function defined in a numbered migration" "$tmp/schema" "warren_it_new: defined in a numbered migration"

fresh_copy
printf 'CREATE VIEW it_view AS SELECT 1 AS one;\n' >"$tmp/schema/functions/999_view.sql"
must_fail "a definition without OR REPLACE" "$tmp/schema" "it_view: a definition file creates with OR REPLACE"

fresh_copy
echo "-- edited" >>"$tmp/schema/020_dead_letter_investigations.sql"
if out=$(superseded "$tmp/schema"); then
    echo "FAIL: the check passed an edit of a migration listed in superseded.sha256" >&2
    exit 1
fi
grep -q "020_dead_letter_investigations.sql: changed since" <<<"$out" || { echo "FAIL: $out" >&2; exit 1; }

echo "ok: $n definitions under schema/, each in one file ($ms ms); a duplicate, a migration's own, a plain CREATE and an unlisted edit are refused"
