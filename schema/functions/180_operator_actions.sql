-- warren definitions: an operator sends an execution to investigation or completes it by hand
-- (schema 031; POST /api/v1/executions/{id}/investigate and .../complete, `warren investigate`,
-- `warren complete`). The API and the CLI on the database URL call the same functions.
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Open a manual record for execution eid, under investigation by who (resolved_by), with
-- notes: for an execution that has not ended or ended without completing (failed, timeout,
-- abandoned). outcome: opened (record_id, doc: the record as show prints it), not_found, ended
-- (completed or cancelled: nothing to investigate) or open (record_id: the execution's open
-- record, which the operator takes over with PATCH instead; one open record per execution).
CREATE OR REPLACE FUNCTION warren_investigate(eid bigint, who text, notes text)
RETURNS TABLE (outcome text, status text, record_id bigint, doc jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    ex executions;
    other bigint;
    rec dead_letters;
BEGIN
    -- The row lock serialises two calls for one execution: the second finds the first's record.
    SELECT * INTO ex FROM executions e WHERE e.id = eid FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::bigint, NULL::jsonb;
        RETURN;
    END IF;
    IF ex.status IN ('completed', 'cancelled') THEN
        RETURN QUERY SELECT 'ended'::text, ex.status, NULL::bigint, NULL::jsonb;
        RETURN;
    END IF;
    SELECT d.id INTO other FROM dead_letters d
     WHERE d.execution_id = eid AND d.resolution IN ('pending', 'investigating')
     ORDER BY d.id LIMIT 1;
    IF other IS NOT NULL THEN
        RETURN QUERY SELECT 'open'::text, ex.status, other, NULL::jsonb;
        RETURN;
    END IF;
    INSERT INTO dead_letters (dedup_key, execution_id, reason, body, resolution, resolved_by,
                              notes, metadata, snapshot)
    VALUES (format('manual/%s/%s', eid, gen_random_uuid()), eid, 'manual', ''::bytea, 'investigating', who, notes, jsonb_build_object('opened_by', who),
            to_jsonb(ex))
    RETURNING * INTO rec;
    RETURN QUERY SELECT 'opened'::text, ex.status, rec.id, warren_dl_doc(rec);
END
$$;

-- Complete execution eid by hand with result res (JSON), by who, notes going to its history
-- row. Completable: failed, timeout and abandoned at any time, and a requested, scheduled or
-- running one only while it is stuck: past its staleness threshold under cfg (the detector's
-- thresholds, warren_staleness: health stale), which the detector would end at its next round.
-- An execution that is being dispatched (scheduling) or cancelled (canceling) is left to finish
-- that. want_attempt, when not NULL, must be the execution's attempt: an operator who read the
-- execution completes what they saw, not a later attempt. outcome: completed (row: the
-- execution now), not_found, or conflict (why; before and attempt as found).
-- Once completed nothing moves the row (src/executor/transitions.c: completed has no
-- successors), so a worker's report that comes late is refused like any report of an ended
-- execution, and a second call is a conflict.
CREATE OR REPLACE FUNCTION warren_complete_by_hand(eid bigint, res jsonb, who text, notes text,
                                                   want_attempt integer, cfg jsonb)
RETURNS TABLE (outcome text, before text, attempt integer, why text, "row" jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    ex executions;
    health text;
    done executions;
BEGIN
    SELECT * INTO ex FROM executions e WHERE e.id = eid FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::integer, NULL::text,
                            NULL::jsonb;
        RETURN;
    END IF;
    IF want_attempt IS NOT NULL AND ex.attempt <> want_attempt THEN
        RETURN QUERY SELECT 'conflict'::text, ex.status, ex.attempt,
            format('it is at attempt %s, not %s: it moved on', ex.attempt, want_attempt),
            to_jsonb(ex);
        RETURN;
    END IF;
    IF ex.status IN ('requested', 'scheduled', 'running') THEN
        SELECT s.health INTO health FROM warren_staleness(cfg) s WHERE s.id = eid;
    END IF;
    IF NOT (ex.status IN ('failed', 'timeout', 'abandoned') OR coalesce(health = 'stale', false))
    THEN
        RETURN QUERY SELECT 'conflict'::text, ex.status, ex.attempt,
            CASE ex.status
                WHEN 'completed' THEN 'it has completed'
                WHEN 'cancelled' THEN 'it was cancelled; a cancelled execution stays so'
                WHEN 'canceling' THEN 'it is being cancelled; wait for it to end'
                WHEN 'scheduling' THEN 'it is being dispatched; try again in a moment'
                ELSE format('it is %s and not stuck (staleness health %s): cancel it or wait',
                            ex.status, coalesce(health, 'unknown')) END,
            to_jsonb(ex);
        RETURN;
    END IF;
    UPDATE executions e SET status = 'completed', result = res, completed_by = who, error = NULL,
                            wait_reason = NULL, ended_at = now()
     WHERE e.id = eid RETURNING * INTO done;
    IF notes IS NOT NULL THEN
        UPDATE execution_events v SET note = v.note || ': ' || notes
         WHERE v.id = (SELECT max(w.id) FROM execution_events w
                        WHERE w.execution_id = eid AND w.to_status = 'completed');
    END IF;
    RETURN QUERY SELECT 'completed'::text, ex.status, ex.attempt, NULL::text, to_jsonb(done);
END
$$;
