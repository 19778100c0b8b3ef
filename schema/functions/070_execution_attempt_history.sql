-- warren definitions: every attempt of every execution (schema 029).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Every attempt of every execution: the stored records, and the implied record of a completion
-- on the first attempt (no stored record of the execution at all), from the row.
CREATE OR REPLACE VIEW execution_attempt_history AS
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
