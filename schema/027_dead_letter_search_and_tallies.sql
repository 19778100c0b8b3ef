-- warren schema 027: dead-letter stats and search stay fast with hundreds of thousands of
-- records (docs/schema.md, "Dead-letter stats and search (027)").
--
-- 1. warren_dl_match (021) becomes inlinable: the planner could not inline it (the ids filter
--    was a subquery), so every statement called it per row with the whole row as an argument,
--    which detoasted each record's snapshot (12 s for a search of 300,000 records), and no
--    filter could use an index. Now its conditions reach the plan, and with the filter's values
--    known (every statement passes it as a parameter of an unnamed statement) the ones not
--    asked for fold away: resolution, reason, queue, execution_id, since/until, the cursor and
--    ids use their indexes. The q test is the same text as before (body_text, error and notes
--    joined by a space, in lower case), as a LIKE a trigram index answers.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The text q searches: body, error and notes joined by a space (NULLs skipped), in lower case:
-- lower(concat_ws(' ', body_text, error, notes)), spelt with operators that are IMMUTABLE
-- (concat_ws is only STABLE), so that an index may hold it and the planner inlines it (a SQL
-- function call per row doubled the cost of a search that reads rows).
-- table-level: dead_letters_search_idx below holds its value, so it must exist before the
-- index and may not change in place (the index would hold stale text): a new migration makes a
-- new function and rebuilds the index on it (docs/schema.md, "Definitions").
CREATE FUNCTION warren_dl_search_text(body_text text, error text, notes text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower(coalesce(body_text, '')
                 || CASE WHEN body_text IS NOT NULL AND error IS NOT NULL THEN ' ' ELSE '' END
                 || coalesce(error, '')
                 || CASE WHEN coalesce(body_text, error) IS NOT NULL AND notes IS NOT NULL
                         THEN ' ' ELSE '' END
                 || coalesce(notes, ''))
$$;

-- function warren_dl_ids: schema/functions/140_dead_letter_filter.sql

-- The q test is `warren_dl_search_text(...) LIKE '%q%'` with q in lower case and its LIKE
-- characters (\, %, _) escaped: the same as 021's strpos(), in the form the index serves.
-- function warren_dl_match: schema/functions/140_dead_letter_filter.sql

CREATE INDEX dead_letters_search_idx ON dead_letters
    USING gin (warren_dl_search_text(body_text, error, notes) gin_trgm_ops);

-- 2. Tallies for GET /api/v1/dead-letters/stats: records by investigation word, queue and
--    resolution, with what the mean time to resolve needs. Append-only deltas: a statement that
--    writes dead letters adds one row per group it touched (its count, signed), so writers never
--    wait for each other on a counter row; every 64th row added folds each group's rows into
--    one (warren_dl_tallies_fold). Stats sum the rows of the groups its filter selects.
CREATE TABLE dead_letter_tallies (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    investigation_reason text,
    queue text,
    resolution text NOT NULL,
    n bigint NOT NULL,          -- records in the group (a delta: negative when they left it)
    resolved_n bigint NOT NULL, -- of them, closed records that needed a human
    resolved_s numeric NOT NULL -- the sum of their resolved_at - received_at, in seconds
);
-- Every delta row and every fold leave dead rows behind, and stats read the whole table: vacuum
-- it after every 2,000 of them, whatever its size (it holds a row per group when folded).
ALTER TABLE dead_letter_tallies SET (autovacuum_vacuum_scale_factor = 0,
                                     autovacuum_vacuum_threshold = 2000);

-- function warren_dl_resolve_s: schema/functions/170_dead_letter_tallies.sql
-- function warren_dl_tallies_fold: schema/functions/170_dead_letter_tallies.sql
-- function warren_dl_tally_rows: schema/functions/170_dead_letter_tallies.sql
-- function warren_dl_tally_update: schema/functions/170_dead_letter_tallies.sql
-- function warren_dl_tally_truncate: schema/functions/170_dead_letter_tallies.sql
-- trigger dead_letters_tally_insert: schema/functions/170_dead_letter_tallies.sql
-- trigger dead_letters_tally_delete: schema/functions/170_dead_letter_tallies.sql
-- trigger dead_letters_tally_update: schema/functions/170_dead_letter_tallies.sql
-- trigger dead_letters_tally_truncate: schema/functions/170_dead_letter_tallies.sql

-- The records written before, in one row per group; each record's time to resolve is
-- warren_dl_resolve_s() of schema/functions/, spelt out here (a numbered migration calls no
-- definition: on a database built from scratch the definitions come after it). The tally
-- triggers come with the definitions, in the same `warren migrate` run: a record written by an
-- executor between this file's COMMIT and theirs would be missed, so upgrade a database older
-- than 027 with the executors stopped (docs/schema.md, "Definitions").
INSERT INTO dead_letter_tallies (investigation_reason, queue, resolution, n, resolved_n,
                                 resolved_s)
SELECT investigation_reason, queue, resolution, count(*), count(s), coalesce(sum(s), 0)
  FROM (SELECT investigation_reason, queue, resolution,
               CASE WHEN resolved_at IS NOT NULL AND investigation_reason IS NOT NULL
                    THEN extract(epoch FROM resolved_at - received_at) END AS s
          FROM dead_letters) d
 GROUP BY 1, 2, 3;
