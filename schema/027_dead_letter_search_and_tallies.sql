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
CREATE FUNCTION warren_dl_search_text(body_text text, error text, notes text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower(coalesce(body_text, '')
                 || CASE WHEN body_text IS NOT NULL AND error IS NOT NULL THEN ' ' ELSE '' END
                 || coalesce(error, '')
                 || CASE WHEN coalesce(body_text, error) IS NOT NULL AND notes IS NOT NULL
                         THEN ' ' ELSE '' END
                 || coalesce(notes, ''))
$$;

-- The record ids of a JSON array, for `id = ANY(...)` (an index scan), NULL for anything else.
CREATE FUNCTION warren_dl_ids(ids jsonb) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(ids) = 'array'
                THEN ARRAY(SELECT jsonb_array_elements_text(ids)::bigint) END
$$;

-- The q test is `warren_dl_search_text(...) LIKE '%q%'` with q in lower case and its LIKE
-- characters (\, %, _) escaped: the same as 021's strpos(), in the form the index serves.
CREATE OR REPLACE FUNCTION warren_dl_match(d dead_letters, f jsonb) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT (f ->> 'resolution' IS NULL OR d.resolution = f ->> 'resolution')
       AND (f ->> 'reason' IS NULL OR d.investigation_reason = f ->> 'reason')
       AND (f ->> 'queue' IS NULL OR d.queue = f ->> 'queue')
       AND (f ->> 'action' IS NULL OR d.action_ref = f ->> 'action')
       AND (f ->> 'execution_id' IS NULL OR d.execution_id = (f ->> 'execution_id')::bigint)
       AND (f ->> 'since' IS NULL OR d.received_at >= (f ->> 'since')::timestamptz)
       AND (f ->> 'until' IS NULL OR d.received_at < (f ->> 'until')::timestamptz)
       AND (f ->> 'below' IS NULL OR d.id < (f ->> 'below')::bigint)
       AND (f ->> 'q' IS NULL
            OR warren_dl_search_text(d.body_text, d.error, d.notes)
               LIKE '%' || replace(replace(replace(lower(f ->> 'q'), '\', '\\'), '%', '\%'),
                                   '_', '\_') || '%')
       AND (jsonb_typeof(f -> 'ids') IS DISTINCT FROM 'array'
            OR d.id = ANY (warren_dl_ids(f -> 'ids')))
$$;

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

-- What a record adds to its group's resolved_s: its time to resolve, in seconds, when it is closed
-- and needed a human (the records mean_time_to_resolve_s averages); NULL otherwise.
CREATE FUNCTION warren_dl_resolve_s(investigation_reason text, received_at timestamptz,
                                    resolved_at timestamptz) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN resolved_at IS NOT NULL AND investigation_reason IS NOT NULL
                THEN extract(epoch FROM resolved_at - received_at) END
$$;

-- Fold the tallies: each group's rows into one (none when they sum to nothing). One folder at a
-- time (a writer that finds the lock taken leaves it to the next); writers only insert, so the
-- fold takes what was committed and leaves what was not.
CREATE FUNCTION warren_dl_tallies_fold() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(1685417330, 0) THEN
        RETURN;
    END IF;
    WITH g AS (SELECT investigation_reason, queue, resolution FROM dead_letter_tallies
                GROUP BY 1, 2, 3 HAVING count(*) > 1),
         gone AS (DELETE FROM dead_letter_tallies t USING g
                   WHERE t.investigation_reason IS NOT DISTINCT FROM g.investigation_reason
                     AND t.queue IS NOT DISTINCT FROM g.queue AND t.resolution = g.resolution
                  RETURNING t.*)
    INSERT INTO dead_letter_tallies (investigation_reason, queue, resolution, n, resolved_n,
                                     resolved_s)
    SELECT investigation_reason, queue, resolution, sum(n), sum(resolved_n), sum(resolved_s)
      FROM gone GROUP BY 1, 2, 3
    HAVING sum(n) <> 0 OR sum(resolved_n) <> 0 OR sum(resolved_s) <> 0;
END
$$;

-- After a statement that inserted or deleted records (its transition table `changed`): one
-- delta row per group, then a fold when a row added is a 64th.
CREATE FUNCTION warren_dl_tally_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    fold boolean;
BEGIN
    WITH ins AS (
        INSERT INTO dead_letter_tallies (investigation_reason, queue, resolution, n, resolved_n,
                                         resolved_s)
        SELECT c.investigation_reason, c.queue, c.resolution, sign * count(*),
               sign * count(c.s), sign * coalesce(sum(c.s), 0)
          FROM (SELECT investigation_reason, queue, resolution,
                       warren_dl_resolve_s(investigation_reason, received_at, resolved_at) AS s
                  FROM changed) c
         GROUP BY 1, 2, 3
        RETURNING id)
    SELECT bool_or(id % 64 = 0) INTO fold FROM ins;
    IF fold THEN
        PERFORM warren_dl_tallies_fold();
    END IF;
    RETURN NULL;
END
$$;

-- After an update that moved a record to another group or changed its time to resolve: the
-- record leaves the old group and joins the new one.
CREATE FUNCTION warren_dl_tally_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    s_old numeric := warren_dl_resolve_s(OLD.investigation_reason, OLD.received_at,
                                         OLD.resolved_at);
    s_new numeric := warren_dl_resolve_s(NEW.investigation_reason, NEW.received_at,
                                         NEW.resolved_at);
    fold boolean;
BEGIN
    WITH ins AS (
        INSERT INTO dead_letter_tallies (investigation_reason, queue, resolution, n, resolved_n,
                                         resolved_s)
        VALUES (OLD.investigation_reason, OLD.queue, OLD.resolution, -1,
                -(s_old IS NOT NULL)::integer, -coalesce(s_old, 0)),
               (NEW.investigation_reason, NEW.queue, NEW.resolution, 1,
                (s_new IS NOT NULL)::integer, coalesce(s_new, 0))
        RETURNING id)
    SELECT bool_or(id % 64 = 0) INTO fold FROM ins;
    IF fold THEN
        PERFORM warren_dl_tallies_fold();
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION warren_dl_tally_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dead_letter_tallies;
    RETURN NULL;
END
$$;

-- Inserts and deletes come in batches (the dead-letter handler's, retention's, purge's): one
-- statement trigger each. Updates are row triggers with a WHEN, so that the updates that touch
-- no tallied column (emitted_at, metadata, notes alone) cost nothing.
CREATE TRIGGER dead_letters_tally_insert AFTER INSERT ON dead_letters
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION warren_dl_tally_rows();
CREATE TRIGGER dead_letters_tally_delete AFTER DELETE ON dead_letters
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION warren_dl_tally_rows();
CREATE TRIGGER dead_letters_tally_update AFTER UPDATE ON dead_letters
    FOR EACH ROW WHEN (OLD.investigation_reason IS DISTINCT FROM NEW.investigation_reason
                       OR OLD.queue IS DISTINCT FROM NEW.queue
                       OR OLD.resolution IS DISTINCT FROM NEW.resolution
                       OR OLD.resolved_at IS DISTINCT FROM NEW.resolved_at
                       OR OLD.received_at IS DISTINCT FROM NEW.received_at)
    EXECUTE FUNCTION warren_dl_tally_update();
CREATE TRIGGER dead_letters_tally_truncate AFTER TRUNCATE ON dead_letters
    FOR EACH STATEMENT EXECUTE FUNCTION warren_dl_tally_truncate();

-- The records written before, in one row per group (the triggers above hold the table's lock
-- from here to COMMIT, so no writer slips between).
INSERT INTO dead_letter_tallies (investigation_reason, queue, resolution, n, resolved_n,
                                 resolved_s)
SELECT investigation_reason, queue, resolution, count(*), count(s), coalesce(sum(s), 0)
  FROM (SELECT investigation_reason, queue, resolution,
               warren_dl_resolve_s(investigation_reason, received_at, resolved_at) AS s
          FROM dead_letters) d
 GROUP BY 1, 2, 3;
