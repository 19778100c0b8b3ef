-- warren definitions: a dead letter as an investigation record (schema 020, 025, 026, 029, 035).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- The investigation word of a detailed reason; NULL: the row needs no investigation.
CREATE OR REPLACE FUNCTION warren_dl_investigation_reason(reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason IN ('expired', 'maxlen', 'delivery_limit', 'dead_lettered', 'worker_retired')
            THEN 'worker_unavailable'
        WHEN reason IN ('rejected', 'scheduled_timeout', 'running_timeout', 'timeout',
                        'queue_timeout')
            THEN 'timeout'
        WHEN reason IN ('worker_stale', 'worker_restarted', 'abandoned') THEN 'abandoned'
        WHEN reason IN ('max_retries_exceeded', 'staleness_timeout', 'unprocessable_result',
                        'poison_message', 'worker_unavailable', 'manual') THEN reason
        WHEN reason IN ('execution_terminal', 'execution_started', 'stale_attempt',
                        'stale_attempt_result', 'wrong_worker', 'status_conflict') THEN NULL
        ELSE 'poison_message'
    END
$$;

-- How urgent a reason is, for the investigation queue's priority score.
CREATE OR REPLACE FUNCTION warren_dl_reason_weight(reason text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE reason
        WHEN 'poison_message' THEN 5
        WHEN 'unprocessable_result' THEN 5
        WHEN 'max_retries_exceeded' THEN 4
        WHEN 'staleness_timeout' THEN 3
        WHEN 'abandoned' THEN 3
        WHEN 'timeout' THEN 3
        WHEN 'worker_unavailable' THEN 2
        ELSE 1
    END
$$;

-- The snapshot's retry delays: the delay each ended attempt's policy applied, in order.
CREATE OR REPLACE FUNCTION warren_dl_retry_delays(execution_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object('attempt', a.attempt, 'delay_ms', a.delay_ms,
                                                 'next_due_at', a.next_due_at)
                              ORDER BY a.id) FILTER (WHERE a.delay_ms IS NOT NULL), '[]')
    FROM execution_attempts a WHERE a.execution_id = warren_dl_retry_delays.execution_id
$$;

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
        SELECT coalesce(jsonb_agg(to_jsonb(v) - 'execution_id' - 'seq' ORDER BY v.seq), '[]')
          INTO hist FROM execution_history v WHERE v.execution_id = d.execution_id;
        SELECT coalesce(jsonb_agg(a ORDER BY a.attempt), '[]') INTO att FROM (
            SELECT (x.h ->> 'attempt')::int AS attempt,
                   (array_agg(x.h ->> 'worker' ORDER BY x.n DESC)
                        FILTER (WHERE x.h ->> 'worker' IS NOT NULL))[1] AS worker,
                   (array_agg(x.h ->> 'error' ORDER BY x.n DESC)
                        FILTER (WHERE x.h ->> 'error' IS NOT NULL))[1] AS error,
                   (array_agg(x.h ->> 'to_status' ORDER BY x.n DESC))[1] AS status,
                   min((x.h ->> 'at')::timestamptz) AS first_at,
                   max((x.h ->> 'at')::timestamptz) AS last_at
              FROM jsonb_array_elements(hist) WITH ORDINALITY AS x(h, n) GROUP BY 1) a;
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

-- On insert: the investigation word, the snapshot, and at most one pending record per
-- execution (a second one is kept, closed, pointing at the pending one).
CREATE OR REPLACE FUNCTION warren_dead_letters_investigate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    other bigint;
BEGIN
    NEW.investigation_reason := warren_dl_investigation_reason(NEW.reason);
    NEW.investigation := warren_dl_snapshot(NEW);
    IF NEW.investigation_reason IS NULL AND NEW.resolution = 'pending' THEN
        NEW.resolution := 'cancelled';
        NEW.resolved_by := coalesce(NEW.resolved_by, 'warren');
        NEW.notes := coalesce(NEW.notes, format('changed nothing (%s): no investigation needed',
                                                NEW.reason));
    ELSIF NEW.resolution = 'pending' AND NEW.execution_id IS NOT NULL THEN
        -- Serialise writers of the same execution's records (the index would refuse the
        -- second and fail the writer's whole batch; the two-key form keeps clear of the
        -- migrator's one-key lock).
        PERFORM pg_advisory_xact_lock(1685417329, hashtext(NEW.execution_id::text));
        SELECT id INTO other FROM dead_letters
            WHERE execution_id = NEW.execution_id AND resolution = 'pending' LIMIT 1;
        IF other IS NOT NULL THEN
            NEW.resolution := 'cancelled';
            NEW.resolved_by := coalesce(NEW.resolved_by, 'warren');
            NEW.notes := coalesce(NEW.notes,
                                  format('record %s is already pending for this execution', other));
        END IF;
    END IF;
    RETURN NEW;
END
$$;

-- Named so that it runs before dead_letters_stamp, which then fills resolved_at of a row closed
-- here: triggers of one event fire in name order.
CREATE OR REPLACE TRIGGER dead_letters_aa_investigate BEFORE INSERT ON dead_letters
    FOR EACH ROW EXECUTE FUNCTION warren_dead_letters_investigate();
