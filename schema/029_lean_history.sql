-- warren schema 029: the happy path writes no history of its own (docs/schema.md, "History").
-- An execution that goes requested -> scheduled -> (running ->) completed costs its insert and
-- two row versions; its history is implied by the row's timestamps (created_at, scheduled_at,
-- started_at, ended_at) and read through execution_history. The trigger stores every other
-- step as before, and before storing one writes down the implied steps that led to it (from the
-- old row's timestamps, marked implied), so the stored rows and the implied tail always tell the
-- whole story in order. A completion on the first attempt leaves no execution_attempts row
-- either: execution_attempt_history implies it from the row.

-- True for a step of the happy path, which the trigger does not store.
CREATE FUNCTION warren_history_happy(from_status text, to_status text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (from_status = 'requested' AND to_status = 'scheduled')
        OR (from_status = 'scheduled' AND to_status = 'running')
        OR (from_status IN ('scheduled', 'running') AND to_status = 'completed')
$$;

-- Where a status sits on the happy path (1 requested .. 4 completed), NULL elsewhere.
CREATE FUNCTION warren_history_step(status text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE status WHEN 'requested' THEN 1 WHEN 'scheduled' THEN 2 WHEN 'running' THEN 3
                       WHEN 'completed' THEN 4 END
$$;

ALTER TABLE execution_events
    ADD COLUMN implied boolean NOT NULL DEFAULT false;  -- written later, from the row's timestamps

-- The steps of e that no history row holds: the happy path from after the last stored
-- (applied) row up to e's status, each at the row's timestamp of it. Empty when the last
-- stored row is off the happy path or e's status is. A completed row passed through running
-- when a running report was applied (reported_at; a completion alone may carry started_at).
CREATE FUNCTION warren_history_implied(e executions)
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
    IF NEW.status IS NOT DISTINCT FROM OLD.status OR warren_history_happy(OLD.status, NEW.status)
    THEN
        RETURN NULL;
    END IF;
    INSERT INTO execution_events (execution_id, at, from_status, to_status, worker, attempt,
                                  implied)
    SELECT OLD.id, i.at, i.from_status, i.to_status, i.worker, i.attempt, true
    FROM warren_history_implied(OLD) i ORDER BY i.step;
    INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error,
                                  note)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.worker, NEW.attempt, NEW.error,
            CASE WHEN NEW.status = 'requested' AND NEW.attempt_kind = 'manual'
                      AND OLD.status IN ('failed', 'timeout', 'abandoned') THEN 'manual retry'
                 WHEN NEW.status = 'requested'
                      AND OLD.status IN ('failed', 'timeout', 'abandoned')
                 THEN 'retry due ' || to_char(NEW.due_at AT TIME ZONE 'UTC',
                                              'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                 WHEN OLD.status = 'abandoned' THEN 'late completion' END);
    RETURN NULL;
END
$$;

-- The whole history of every execution: the stored rows in order, then the implied tail
-- (id NULL, implied true). seq orders one execution's rows.
CREATE VIEW execution_history AS
SELECT v.execution_id, v.id AS seq, v.id, v.at, v.from_status, v.to_status, v.worker, v.attempt,
       v.error, v.note, v.applied, v.implied
FROM execution_events v
UNION ALL
SELECT e.id, (1::bigint << 62) + i.step, NULL::bigint, i.at, i.from_status, i.to_status, i.worker,
       i.attempt, NULL::text, NULL::text, true, true
FROM executions e CROSS JOIN LATERAL warren_history_implied(e) i;

-- Since when the execution is in its status: its last applied history row, stored or implied.
CREATE OR REPLACE FUNCTION warren_state_since(e executions) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT i.at FROM warren_history_implied(e) i ORDER BY i.step DESC LIMIT 1),
                    (SELECT v.at FROM execution_events v WHERE v.execution_id = e.id AND v.applied
                     ORDER BY v.id DESC LIMIT 1), e.updated_at)
$$;

-- Every attempt of every execution: the stored records, and the implied record of a completion
-- on the first attempt (no stored record of the execution at all), from the row.
CREATE VIEW execution_attempt_history AS
SELECT a.execution_id, a.id AS seq, a.id, a.attempt, a.kind, a.worker, a.incarnation,
       a.scheduled_at, a.started_at, a.ended_at, a.status, a.outcome, a.error, a.exit_code,
       a.decision, a.delay_ms, a.next_due_at, a.x_death
FROM execution_attempts a
UNION ALL
SELECT e.id, 1::bigint << 62, NULL::bigint, e.attempt, e.attempt_kind, e.worker, e.incarnation,
       e.scheduled_at, e.started_at, e.ended_at, e.status, 'completed', e.error,
       CASE WHEN e.outcome ->> 'exit_code' ~ '^-?[0-9]{1,9}$'
            THEN (e.outcome ->> 'exit_code')::integer END,
       'none', NULL::bigint, NULL::timestamptz, NULL::jsonb
FROM executions e
WHERE e.status = 'completed'
  AND NOT EXISTS (SELECT 1 FROM execution_attempts p WHERE p.execution_id = e.id);

-- Indexes every row version paid for: warren list reads newest first by id (the primary key,
-- or executions_status_id_idx with a status), as the API does; the status index leaves out
-- completed rows, the bulk of the table, which a backwards scan of the primary key finds.
DROP INDEX executions_created_idx;
DROP INDEX executions_status_created_idx;
DROP INDEX executions_status_id_idx;
CREATE INDEX executions_status_id_idx ON executions (status, id) WHERE status <> 'completed';
-- The monitor's two sweeps of scheduled rows read them through executions_status_id_idx: rows in
-- flight are bounded by the workers' capacity, and an index of their own cost every dispatch
-- two more index entries.
DROP INDEX executions_scheduled_idx;
DROP INDEX executions_unconfirmed_idx;

-- The dead letter's snapshot (026) reads the whole history, implied steps included.
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
