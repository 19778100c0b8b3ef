-- warren definitions: the history of an execution, its stored rows and the implied happy path
-- (schema 002, 006, 015, 029, 031).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- True for a step of the happy path, which the trigger does not store.
CREATE OR REPLACE FUNCTION warren_history_happy(from_status text, to_status text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (from_status = 'requested' AND to_status = 'scheduled')
        OR (from_status = 'scheduled' AND to_status = 'running')
        OR (from_status IN ('scheduled', 'running') AND to_status = 'completed')
$$;

-- Where a status sits on the happy path (1 requested .. 4 completed), NULL elsewhere.
CREATE OR REPLACE FUNCTION warren_history_step(status text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE status WHEN 'requested' THEN 1 WHEN 'scheduled' THEN 2 WHEN 'running' THEN 3
                       WHEN 'completed' THEN 4 END
$$;

-- The steps of e that no history row holds: the happy path from after the last stored
-- (applied) row up to e's status, each at the row's timestamp of it. Empty when the last
-- stored row is off the happy path or e's status is. A completed row passed through running
-- when a running report was applied (reported_at; a completion alone may carry started_at).
CREATE OR REPLACE FUNCTION warren_history_implied(e executions)
RETURNS TABLE (step integer, at timestamptz, from_status text, to_status text, worker text,
               attempt integer)
LANGUAGE sql STABLE AS $$
    SELECT s.step, s.at, s.from_status, s.to_status, s.worker, s.attempt
    FROM (VALUES (1, e.created_at, NULL::text, 'requested', NULL::text, 0),
                 (2, e.scheduled_at, 'requested', 'scheduled', e.worker, e.attempt),
                 (3, CASE WHEN e.status = 'running' THEN coalesce(e.started_at, e.updated_at)
                          WHEN e.reported_at IS NOT NULL THEN e.started_at END, 'scheduled',
                  'running', e.worker, e.attempt),
                 (4, e.ended_at, CASE WHEN e.reported_at IS NULL THEN 'scheduled' ELSE 'running' END,
                  'completed', e.worker, e.attempt)) AS s(step, at, from_status, to_status, worker,
                                                           attempt)
    WHERE s.step <= coalesce(warren_history_step(e.status), 0)
      AND s.step > coalesce((SELECT coalesce(warren_history_step(v.to_status), 99)
                             FROM execution_events v WHERE v.execution_id = e.id AND v.applied
                             ORDER BY v.id DESC LIMIT 1), 0)
      AND s.at IS NOT NULL
$$;

CREATE OR REPLACE FUNCTION warren_execution_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'requested' THEN
            INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt,
                                          error)
            VALUES (NEW.id, NULL, NEW.status, NEW.worker, NEW.attempt, NEW.error);
        END IF;
        RETURN NULL;
    END IF;
    -- A completion by hand (completed_by, schema 031) is stored even from scheduled or running:
    -- its row says who did it.
    IF NEW.status IS NOT DISTINCT FROM OLD.status
       OR (warren_history_happy(OLD.status, NEW.status) AND NEW.completed_by IS NULL) THEN
        RETURN NULL;
    END IF;
    INSERT INTO execution_events (execution_id, at, from_status, to_status, worker, attempt,
                                  implied)
    SELECT OLD.id, i.at, i.from_status, i.to_status, i.worker, i.attempt, true
    FROM warren_history_implied(OLD) i ORDER BY i.step;
    INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error,
                                  note)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.worker, NEW.attempt, NEW.error,
            CASE WHEN NEW.status = 'completed' AND NEW.completed_by IS NOT NULL
                 THEN 'completed by hand by ' || NEW.completed_by
                 WHEN NEW.status = 'requested' AND NEW.redispatches > OLD.redispatches
                 THEN 'redispatch ' || NEW.redispatches || ': never started on '
                      || coalesce(OLD.worker, 'no worker')
                 WHEN NEW.status = 'requested' AND NEW.attempt_kind = 'manual'
                      AND OLD.status IN ('failed', 'timeout', 'abandoned') THEN 'manual retry'
                 WHEN NEW.status = 'requested'
                      AND OLD.status IN ('failed', 'timeout', 'abandoned')
                 THEN 'retry due ' || to_char(NEW.due_at AT TIME ZONE 'UTC',
                                              'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                 WHEN OLD.status = 'abandoned' THEN 'late completion' END);
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER executions_event AFTER INSERT OR UPDATE OF status ON executions
    FOR EACH ROW EXECUTE FUNCTION warren_execution_event();

-- The whole history of every execution: the stored rows in order, then the implied tail
-- (id NULL, implied true). seq orders one execution's rows.
CREATE OR REPLACE VIEW execution_history AS
SELECT v.execution_id, v.id AS seq, v.id, v.at, v.from_status, v.to_status, v.worker, v.attempt,
       v.error, v.note, v.applied, v.implied
FROM execution_events v
UNION ALL
SELECT e.id, (1::bigint << 62) + i.step, NULL::bigint, i.at, i.from_status, i.to_status, i.worker,
       i.attempt, NULL::text, NULL::text, true, true
FROM executions e CROSS JOIN LATERAL warren_history_implied(e) i;
