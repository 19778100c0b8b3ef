-- warren schema 026: what a dead letter costs (docs/performance.md, the (c) line).
--
-- 1. Closing pending records when their execution completes (025) becomes a row trigger with a
--    WHEN condition. 025's statement trigger kept a transition table of every UPDATE of
--    executions and joined it with dead_letters, whose plan could not use the pending index for
--    a table without statistics: every UPDATE of executions scanned dead_letters (2.5 ms a
--    statement with 5,000 records, growing with the table). Now only an update that makes a row
--    completed queues an event, and its probe is one lookup in dead_letters_one_pending_idx.
DROP TRIGGER executions_close_dead_letters ON executions;
DROP FUNCTION warren_dl_close_completed();

CREATE FUNCTION warren_dl_close_completed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dead_letters d
       SET resolution = 'cancelled', resolved_by = 'warren',
           notes = coalesce(d.notes || E'\n', '')
                   || format('execution completed at attempt %s: no investigation needed',
                             NEW.attempt)
     WHERE d.execution_id = NEW.id AND d.resolution = 'pending';
    RETURN NULL;
END
$$;

CREATE TRIGGER executions_close_dead_letters
    AFTER UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.status = 'completed' AND OLD.status IS DISTINCT FROM 'completed')
    EXECUTE FUNCTION warren_dl_close_completed();

-- 2. The snapshot (020) in PL/pgSQL: the same document, with its statements' plans kept for the
--    session instead of a SQL function planned again for every record, and the execution's
--    history read once (the attempts are folded from it).
CREATE OR REPLACE FUNCTION warren_dl_snapshot(d dead_letters) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    ex executions;
    hist jsonb := '[]';
    att jsonb := '[]';
    breakers text := current_setting('warren.breakers', true);
BEGIN
    IF d.execution_id IS NOT NULL THEN
        SELECT * INTO ex FROM executions e WHERE e.id = d.execution_id;
        SELECT coalesce(jsonb_agg(to_jsonb(v) - 'execution_id' ORDER BY v.id), '[]') INTO hist
          FROM execution_events v WHERE v.execution_id = d.execution_id;
        SELECT coalesce(jsonb_agg(a ORDER BY a.attempt), '[]') INTO att FROM (
            SELECT (h ->> 'attempt')::int AS attempt,
                   (array_agg(h ->> 'worker' ORDER BY (h ->> 'id')::bigint DESC)
                        FILTER (WHERE h ->> 'worker' IS NOT NULL))[1] AS worker,
                   (array_agg(h ->> 'error' ORDER BY (h ->> 'id')::bigint DESC)
                        FILTER (WHERE h ->> 'error' IS NOT NULL))[1] AS error,
                   (array_agg(h ->> 'to_status' ORDER BY (h ->> 'id')::bigint DESC))[1] AS status,
                   min((h ->> 'at')::timestamptz) AS first_at,
                   max((h ->> 'at')::timestamptz) AS last_at
              FROM jsonb_array_elements(hist) h GROUP BY 1) a;
    END IF;
    RETURN jsonb_build_object(
        'execution', CASE WHEN ex.id IS NOT NULL THEN to_jsonb(ex) END,
        'attempts', att,
        'history', hist,
        'x_death', coalesce(CASE WHEN jsonb_typeof(d.headers -> 'x-death') = 'array'
                                 THEN d.headers -> 'x-death' END, '[]'),
        'headers', d.headers,
        'body_text', d.body_text,
        'body_base64', translate(encode(d.body, 'base64'), E'\n', ''),
        'stderr_tail', ex.outcome -> 'stderr_tail',
        'retry_delays', CASE WHEN d.execution_id IS NULL THEN '[]'::jsonb
                             ELSE warren_dl_retry_delays(d.execution_id) END,
        'breakers', CASE WHEN coalesce(breakers, '') <> '' THEN breakers::jsonb END,
        'taken_at', now());
END
$$;
