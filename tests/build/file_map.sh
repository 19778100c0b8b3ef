#!/usr/bin/env bash
# docs/architecture.md names every file under src/ and include/ with its role: a file that is
# not in its "## Files" map fails, and so does a row for a file that does not exist, a row in
# another folder's section, a row twice, or a row without a role. Each failure says which line
# to add, move or delete, and where.
set -euo pipefail

src=${WARREN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
doc=docs/architecture.md
[ -f "$src/$doc" ] || { echo "FAIL: no $doc"; exit 1; }
export LC_ALL=C

# The map: "LINE<TAB>KIND<TAB>TEXT" where KIND is "section" (TEXT: the folder it covers, e.g.
# src/common/) or "row" (TEXT: path<TAB>role), for the lines between "## Files" and the next
# "## " heading; "end<TAB>LINE" marks where that section ends.
map=$(awk '
    /^## / { if (in_files) { print NR "\tend"; in_files = 0 } }
    /^## Files[[:space:]]*$/ { in_files = 1; next }
    !in_files { next }
    /^### `[^`]+`/ {
        key = $0; sub(/^### `/, "", key); sub(/`.*/, "", key)
        print NR "\tsection\t" key; next
    }
    /^\| `(src|include)\// {
        path = $0; sub(/^\| `/, "", path); sub(/`.*/, "", path)
        role = $0; sub(/^\| `[^`]*` \|/, "", role); sub(/\|[[:space:]]*$/, "", role)
        gsub(/^[[:space:]]+|[[:space:]]+$/, "", role)
        print NR "\trow\t" path "\t" role
    }
    END { if (in_files) print NR + 1 "\tend" }
' "$src/$doc")
[ -n "$map" ] || { echo "FAIL: $doc has no \"## Files\" section"; exit 1; }

failures=0
fail() {
    printf 'FAIL: %s\n' "$*"
    failures=$((failures + 1))
}

declare -A row_line=() row_section=() section_line=()
sections=()
rows=()
end_line=
current=
while IFS=$'\t' read -r line kind a b; do
    case "$kind" in
        section)
            current=$a
            sections+=("$a")
            section_line[$a]=$line
            ;;
        row)
            if [ -n "${row_line[$a]:-}" ]; then
                fail "$doc:$line lists $a again (first at line ${row_line[$a]}): delete line $line"
                continue
            fi
            row_line[$a]=$line
            row_section[$a]=$current
            rows+=("$a")
            case "$b" in
                '' | '<'*) fail "$doc:$line: the row of $a has no role: say in one line what the file is for" ;;
            esac
            ;;
        end) end_line=$line ;;
    esac
done <<<"$map"

# The section a path belongs in: the longest section folder that is a prefix of it.
section_of() {
    local best='' s
    for s in "${sections[@]}"; do
        [[ "$1" == "$s"* && ${#s} -gt ${#best} ]] && best=$s
    done
    printf '%s' "$best"
}

mapfile -t files < <(cd "$src" && find src include -type f ! -name '.*' ! -name '*~' \
    ! -name '*.orig' ! -name '*.rej' ! -name '*.swp' | sort)

# Every folder under src/ is a module and has its section.
for dir in "$src"/src/*/; do
    [ -d "$dir" ] || continue
    key=src/$(basename "$dir")/
    [ -z "${section_line[$key]:-}" ] || continue
    block="  ### \`$key\`: <what the module owns>
  | file | role |
  |---|---|"
    for f in "${files[@]}"; do
        [[ "$f" == "$key"* ]] && block+="
  | \`$f\` | <what it is for, in one line> |"
    done
    fail "module ${key%/} has no section in the file map of $doc: add at the end of the map (before line $end_line, the next \"## \" heading)
$block"
done

# Every file has a row, in its section.
declare -A on_disk=()
for f in "${files[@]}"; do
    on_disk[$f]=1
    [ -n "${row_line[$f]:-}" ] && continue
    want=$(section_of "$f")
    if [[ "$f" == src/*/* ]]; then
        module=${f#src/}
        [ "$want" = "src/${module%%/*}/" ] || continue # its module has no section: said above
    fi
    [ -n "$want" ] || {
        fail "$f is not in the file map of $doc, which has no section for it"
        continue
    }
    # Where: after the last row of that section that sorts before f, else before its first row.
    after='' before=''
    for r in "${rows[@]}"; do
        [ "${row_section[$r]}" = "$want" ] || continue
        if [[ "$r" < "$f" ]]; then after=$r; elif [ -z "$before" ]; then before=$r; fi
    done
    if [ -n "$after" ]; then
        where="after line ${row_line[$after]} (the row of $after)"
    elif [ -n "$before" ]; then
        where="before line ${row_line[$before]} (the row of $before)"
    else
        where="into the table under line ${section_line[$want]} (### \`$want\`)"
    fi
    fail "$f is not in the file map of $doc: add $where the line
  | \`$f\` | <what it is for, in one line> |"
done

# Every row names a file that exists, in the right section.
for r in "${rows[@]}"; do
    if [ -z "${on_disk[$r]:-}" ]; then
        fail "$doc:${row_line[$r]} lists $r, which does not exist: delete line ${row_line[$r]} (or correct the path)"
        continue
    fi
    want=$(section_of "$r")
    [ "${row_section[$r]}" = "$want" ] ||
        fail "$doc:${row_line[$r]} lists $r under ### \`${row_section[$r]}\`: move the line into ### \`$want\` (line ${section_line[$want]})"
done

if [ "$failures" -gt 0 ]; then
    echo "FAIL: file_map: $failures problem(s) with the file map of $doc"
    exit 1
fi
echo "PASS: file_map (${#files[@]} files, ${#sections[@]} sections)"
