-- warren definitions: the dead-letter tallies behind the stats (schema 027).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- What a record adds to its group's resolved_s: its time to resolve, in seconds, when it is closed
-- and needed a human (the records mean_time_to_resolve_s averages); NULL otherwise.
CREATE OR REPLACE FUNCTION warren_dl_resolve_s(investigation_reason text, received_at timestamptz,
                                    resolved_at timestamptz) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN resolved_at IS NOT NULL AND investigation_reason IS NOT NULL
                THEN extract(epoch FROM resolved_at - received_at) END
$$;

-- Fold the tallies: each group's rows into one (none when they sum to nothing). One folder at a
-- time (a writer that finds the lock taken leaves it to the next); writers only insert, so the
-- fold takes what was committed and leaves what was not.
CREATE OR REPLACE FUNCTION warren_dl_tallies_fold() RETURNS void
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
CREATE OR REPLACE FUNCTION warren_dl_tally_rows() RETURNS trigger
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
CREATE OR REPLACE FUNCTION warren_dl_tally_update() RETURNS trigger
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

CREATE OR REPLACE FUNCTION warren_dl_tally_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dead_letter_tallies;
    RETURN NULL;
END
$$;

-- Inserts and deletes come in batches (the dead-letter handler's, retention's, purge's): one
-- statement trigger each. Updates are row triggers with a WHEN, so that the updates that touch
-- no tallied column (emitted_at, metadata, notes alone) cost nothing.
CREATE OR REPLACE TRIGGER dead_letters_tally_insert AFTER INSERT ON dead_letters
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION warren_dl_tally_rows();

CREATE OR REPLACE TRIGGER dead_letters_tally_delete AFTER DELETE ON dead_letters
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION warren_dl_tally_rows();

CREATE OR REPLACE TRIGGER dead_letters_tally_update AFTER UPDATE ON dead_letters
    FOR EACH ROW WHEN (OLD.investigation_reason IS DISTINCT FROM NEW.investigation_reason
                       OR OLD.queue IS DISTINCT FROM NEW.queue
                       OR OLD.resolution IS DISTINCT FROM NEW.resolution
                       OR OLD.resolved_at IS DISTINCT FROM NEW.resolved_at
                       OR OLD.received_at IS DISTINCT FROM NEW.received_at)
    EXECUTE FUNCTION warren_dl_tally_update();

CREATE OR REPLACE TRIGGER dead_letters_tally_truncate AFTER TRUNCATE ON dead_letters
    FOR EACH STATEMENT EXECUTE FUNCTION warren_dl_tally_truncate();
