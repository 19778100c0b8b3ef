#!/usr/bin/env bash
# The execution statuses the binary knows (warren/exec_status.h, as `warren list --help` shows
# them) are exactly those the schema allows (executions_status_check), and its final statuses
# are exactly those the schema requires an ended_at for (executions_ended_check) and stamps
# (warren_executions_stamp): the C list and the SQL cannot drift apart.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

"$WARREN_BIN" migrate >"$TEST_TMP/migrate.out" 2>&1 || fail "warren migrate: $(cat "$TEST_TMP/migrate.out")"

# quoted TEXT: the single-quoted words in TEXT, sorted, one a line.
quoted() { grep -o "'[a-z_]*'" <<<"$1" | tr -d "'" | sort; }
# listed TEXT: the words of a comma-separated list, sorted, one a line.
listed() { tr ',' '\n' <<<"$1" | tr -d ' ' | grep -v '^$' | sort; }
constraint() {
    psql_q "select pg_get_constraintdef(oid) from pg_constraint
            where conrelid = 'executions'::regclass and conname = '$1'"
}

help=$("$WARREN_BIN" list --help)
all=$(sed -n '/one of:/{n;p}' <<<"$help")
final=$(sed -n 's/.*(final: \(.*\))$/\1/p' <<<"$help")
{ [ -n "$all" ] && [ -n "$final" ]; } || fail "no status lists in: $help"
assert_eq 10 "$(listed "$all" | wc -l)" "statuses listed by the binary"

assert_eq "$(listed "$all")" "$(quoted "$(constraint executions_status_check)")" \
    "statuses = executions_status_check"
assert_eq "$(listed "$final")" "$(quoted "$(constraint executions_ended_check)")" \
    "final statuses = executions_ended_check"
stamp=$(psql_q "select prosrc from pg_proc where proname = 'warren_executions_stamp'")
assert_eq "$(listed "$final")" "$(quoted "$(grep 'NEW.status IN' <<<"$stamp")")" \
    "final statuses = warren_executions_stamp"
pass
