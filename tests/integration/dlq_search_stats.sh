#!/usr/bin/env bash
# Dead-letter search and stats at scale (schema 027, docs/schema.md): the trigram index, the
# tallies and their triggers exist; the filter is inlined, so a search can use the index; q still
# finds exactly what 021's test found (any case, across body, error and notes, with %, _ and \
# taken literally); stats from the tallies equal the counts of the rows through inserts, updates,
# deletes, a conflict, a fold and a TRUNCATE; the API and `warren dlq` on the database URL agree.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
require_stack

export WARREN__EXECUTOR__MONITOR_INTERVAL_S=0 WARREN__STALENESS__INTERVAL_S=0
api_start ex
q=$(unique_name dq)
on_exit "psql_q \"delete from dead_letters where queue = '$q'\" >/dev/null"

log "the objects of schema 027"
assert_eq "pg_trgm|dead_letters_search_idx|dead_letter_tallies" "$(psql_q "select
    (select extname from pg_extension where extname = 'pg_trgm') || '|' ||
    (select indexname from pg_indexes where indexname = 'dead_letters_search_idx') || '|' ||
    to_regclass('dead_letter_tallies')::text")" "extension, index, table"
assert_eq "dead_letters_tally_delete,dead_letters_tally_insert,dead_letters_tally_truncate,dead_letters_tally_update" \
    "$(psql_q "select string_agg(tgname, ',' order by tgname) from pg_trigger
               where tgrelid = 'dead_letters'::regclass and tgname like 'dead_letters_tally_%'")" \
    "the tally triggers"

log "a database owner that is no superuser can apply it (pg_trgm is a trusted extension)"
owner=$(unique_name mig | tr -c 'a-z0-9\n' _)
psql_q "create role $owner login nosuperuser nocreatedb nocreaterole password 'pw-$owner'" >/dev/null
on_exit "psql_q 'drop role if exists $owner' >/dev/null"
psql_q "create database $owner owner $owner" >/dev/null
on_exit "psql_q 'drop database if exists $owner with (force)' >/dev/null"
out=$(WARREN__DATABASE__URL="postgresql://$owner:pw-$owner@127.0.0.1:$WARREN_PG_PORT/$owner" \
    "$WARREN_BIN" migrate 2>&1) || fail "warren migrate as the database's owner: $out"
assert_contains "$out" "027_dead_letter_search_and_tallies.sql" "027 applied by the owner"

# dl REASON BODY_TEXT ERROR [RESOLUTION] [RESOLVE_AFTER_S] [NOTES]: one record of queue $q,
# received a day ago; prints its id.
dl() {
    local res=${4:-pending} resolved=NULL notes=${6:-}
    [ -z "${5:-}" ] || resolved="now() - interval '1 day' + interval '$5 s'"
    psql_q "insert into dead_letters (dedup_key, reason, queue, body, body_text, error, resolution,
                received_at, resolved_at, notes)
            values ('$q/' || gen_random_uuid(), '$1', '$q', '\\x00ff',
                    nullif(\$b\$$2\$b\$, ''), nullif(\$e\$$3\$e\$, ''), '$res',
                    now() - interval '1 day',
                    $resolved,
                    nullif(\$n\$$notes\$n\$, '')) returning id"
}
r1=$(dl expired 'Order 100% done_ok C:\path\x' 'Boom')
r2=$(dl parse_error '{"a": "Foo"}' 'bar' investigating)
r3=$(dl execution_terminal 'zzz' '')
r4=$(dl worker_stale 'w' 'stale' permanent_failure 90)
r5=$(dl scheduled_timeout 't' '' manually_resolved 30.5 'Ticket OPS-77')
r6=$(dl oversized '' 'only error')

cli() { env -u WARREN_API_URL "$WARREN_BIN" dlq "$@"; }
# found TEXT: the ids `warren dlq list --search TEXT` finds in $q.
found() { cli list --queue "$q" --search "$1" --json | jq -r '[.items[].id] | sort | join(",")'; }
# expected TEXT: the ids 021's test (strpos over the joined text) finds in $q.
expected() {
    psql_q "select coalesce(string_agg(id::text, ',' order by id::text), '') from dead_letters
            where queue = '$q' and strpos(lower(concat_ws(' ', body_text, error, notes)),
                                          lower(\$t\$$1\$t\$)) > 0"
}

log "search: the same matches as before, with LIKE characters taken literally"
for t in '100%' '%' 'e_o' '_' 'C:\path' "\\" 'FOO' 'foo"} bar' 'ops-77' 'only error' 'Boom' 'nothing-like-this'; do
    assert_eq "$(expected "$t")" "$(found "$t")" "search '$t'"
done
assert_eq "$r1" "$(found '100%')" "a percent sign is a percent sign"
assert_eq "" "$(found 'done%ok')" "and no wildcard"
assert_eq "$r1" "$(found 'e_o')" "an underscore is an underscore"
assert_eq "$r2" "$(found 'foo"} bar')" "body and error joined by a space"
assert_eq "$r6" "$(found 'ONLY error')" "a record without a text body, by its error"

log "the filter is inlined: a search, the ids and the queue can use their indexes (bitmap scans)"
plan() {
    psql_q "set enable_seqscan = off; set enable_indexscan = off;
            explain (costs off) select d.id from dead_letters d
            where warren_dl_match(d, \$f\$$1\$f\$::jsonb) order by d.id desc limit 10"
}
p=$(plan '{"q": "done_ok"}')
assert_contains "$p" "dead_letters_search_idx" "a search uses the trigram index"
assert_not_contains "$p" "warren_dl_match" "no per-row call of the filter"
assert_contains "$(plan "{\"ids\": [$r1, $r2]}")" "dead_letters_pkey" "ids use the primary key"
assert_contains "$(plan "{\"queue\": \"$q\"}")" "dead_letters_queue_idx" "a queue uses its index"

# same: stats of $q from the tallies equal the counts of its rows (a `since` filter takes the
# path that counts rows), and the tallies of the whole table equal its rows, group by group.
same() {
    local tallied counted
    tallied=$(cli stats --queue "$q" --json | jq -cS 'del(.oldest_pending_age_s)')
    counted=$(cli stats --queue "$q" --since 1970-01-01T00:00:00Z --json | jq -cS 'del(.oldest_pending_age_s)')
    assert_eq "$counted" "$tallied" "stats from the tallies, $1"
    assert_eq 0 "$(psql_q "with t as (select investigation_reason, queue, resolution, sum(n) n,
            sum(resolved_n) rn, sum(resolved_s) rs from dead_letter_tallies group by 1, 2, 3
            having sum(n) <> 0),
        c as (select investigation_reason, queue, resolution, count(*) n, count(s) rn,
            coalesce(sum(s), 0) rs from (select *, warren_dl_resolve_s(investigation_reason,
            received_at, resolved_at) s from dead_letters) d group by 1, 2, 3)
        select count(*) from ((table t except table c) union all (table c except table t)) x")" \
        "every group's tally is its rows, $1"
}

log "stats"
same "after inserts"
assert_eq '6|abandoned=1,none=1,poison_message=2,timeout=1,worker_unavailable=1|cancelled=1,investigating=1,manually_resolved=1,pending=2,permanent_failure=1|60.25' \
    "$(cli stats --queue "$q" --json | jq -r 'def kv(o): [o | to_entries[] | "\(.key)=\(.value)"] | sort | join(",");
        "\(.total)|\(kv(.by_reason))|\(kv(.by_resolution))|\(.mean_time_to_resolve_s)"')" \
    "counts and the mean time to resolve"
psql_q "update dead_letters set resolution = 'manually_resolved', notes = 'fixed' where id = $r1" >/dev/null
psql_q "update dead_letters set emitted_at = now(), metadata = '{\"t\": 1}' where id = $r2" >/dev/null
psql_q "update dead_letters set resolution = 'investigating' where id = $r5" >/dev/null
same "after updates"
assert_eq "$r1" "$(found 'FIXED')" "a search finds new notes"
psql_q "insert into dead_letters (dedup_key, reason, queue, body)
        select dedup_key, 'expired', queue, body from dead_letters where id = $r4
        on conflict (dedup_key) do nothing" >/dev/null
psql_q "delete from dead_letters where id in ($r3, $r4)" >/dev/null
same "after a conflict and deletes"
assert_eq "4" "$(cli stats --queue "$q" --json | jq -r .total)" "four left"
psql_q "select warren_dl_tallies_fold()" >/dev/null
assert_eq "" "$(psql_q "select 1 from dead_letter_tallies group by investigation_reason, queue,
    resolution having count(*) > 1 limit 1")" "a fold leaves one row per group"
same "after a fold"
assert_eq "0|0" "$(psql_q "begin; truncate dead_letters;
    select count(*) || '|' || coalesce(sum(n), 0) from dead_letter_tallies; rollback")" \
    "a TRUNCATE empties the tallies"

log "the API answers as the CLI does, also once its statements are prepared"
for i in 1 2 3 4 5 6 7; do
    expect 200 GET "/api/v1/dead-letters/stats?queue=$q"
    assert_eq "$(cli stats --queue "$q" --json | jq -cS 'del(.oldest_pending_age_s)')" \
        "$(jq -cS 'del(.oldest_pending_age_s)' <<<"$CALL_BODY")" "API stats, call $i"
    expect 200 GET "/api/v1/dead-letters?queue=$q&q=E_O"
    assert_eq "$r1" "$(jq -r '[.items[].id] | join(",")' <<<"$CALL_BODY")" "API search, call $i"
done
expect 200 GET "/api/v1/dead-letters/stats"
assert_eq "$(psql_q "select count(*) from dead_letters")" "$(jq -r .total <<<"$CALL_BODY")" \
    "the total of every record"
pass
