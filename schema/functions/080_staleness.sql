-- warren definitions: the staleness detector (schema 022, 029, 033, 035).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Since when the execution is in its status: its last applied history row, stored or implied.
CREATE OR REPLACE FUNCTION warren_state_since(e executions) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT i.at FROM warren_history_implied(e) i ORDER BY i.step DESC LIMIT 1),
                    (SELECT v.at FROM execution_events v WHERE v.execution_id = e.id AND v.applied
                     ORDER BY v.id DESC LIMIT 1), e.updated_at)
$$;

CREATE OR REPLACE FUNCTION warren_stale_threshold(action text, status text, cfg jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce((cfg -> 'actions' -> action ->> status)::integer,
                    (cfg -> 'defaults' ->> status)::integer, 0)
$$;

-- Every non-terminal execution the detector watches, with its health. Time in requested counts
-- from due_at when that is later (schema 033): a retry's backoff or a submission's run_at is
-- waited out before the requested threshold starts, so neither is failed before it could run;
-- and while its action is paused (schema 035) it is healthy, its time counting again from the
-- resume.
CREATE OR REPLACE FUNCTION warren_staleness(cfg jsonb)
RETURNS TABLE (id bigint, action_ref text, status text, worker text, attempt integer,
               since timestamptz, time_in_state_s double precision, threshold_s integer,
               health text)
LANGUAGE sql STABLE AS $$
    SELECT e.id, e.action_ref, e.status, e.worker, e.attempt, s.since, s.age, t.th,
           CASE WHEN t.th <= 0 THEN 'healthy'
                WHEN s.age >= t.th THEN 'stale'
                WHEN s.age >= t.th * coalesce((cfg ->> 'warning_pct')::float8, 80) / 100
                    THEN 'warning'
                ELSE 'healthy' END
    FROM executions e LEFT JOIN action_pauses p ON p.action_ref = e.action_ref,
         LATERAL (SELECT CASE WHEN e.status = 'requested'
                              THEN greatest(warren_state_since(e), e.due_at, p.resumed_at)
                              ELSE warren_state_since(e) END AS since) s0,
         LATERAL (SELECT s0.since, greatest(extract(epoch FROM now() - s0.since), 0)::float8
                             AS age) s,
         LATERAL (SELECT CASE WHEN e.status = 'requested' AND p.paused_at IS NOT NULL
                                   AND p.resumed_at IS NULL THEN 0
                              ELSE warren_stale_threshold(e.action_ref, e.status, cfg) END AS th) t
    WHERE e.status IN ('requested', 'scheduled', 'running')
$$;

-- One round of the detector, safe with several executors (SKIP LOCKED, attempt fences, the
-- dead letters' dedup key): up to lim stale executions end (failed, or abandoned when running)
-- with a staleness_timeout record, and up to lim new warnings are marked. Returns what it did:
-- kind 'stale' or 'warning'.
CREATE OR REPLACE FUNCTION warren_staleness_sweep(cfg jsonb, lim integer)
RETURNS TABLE (id bigint, kind text, from_status text, to_status text, worker text,
               time_in_state_s double precision, threshold_s integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH cand AS (SELECT s.* FROM warren_staleness(cfg) s WHERE s.health = 'stale'
                  ORDER BY s.id LIMIT lim),
    locked AS (SELECT e.id, e.attempt, e.status, row_to_json(e)::jsonb AS snap
               FROM executions e JOIN cand c ON c.id = e.id
               WHERE e.status = c.status AND e.attempt = c.attempt
               FOR UPDATE OF e SKIP LOCKED),
    changed AS (UPDATE executions e SET
                    status = CASE WHEN l.status = 'running' THEN 'abandoned' ELSE 'failed' END,
                    error = format('Stale: %s for %s s, past its staleness threshold of %s s',
                                   l.status, round(c.time_in_state_s::numeric), c.threshold_s),
                    wait_reason = NULL
                FROM locked l JOIN cand c ON c.id = l.id
                WHERE e.id = l.id AND e.status = l.status AND e.attempt = l.attempt
                RETURNING e.id, l.status AS was, e.status AS now, e.worker, e.attempt, e.error,
                          l.snap, c.time_in_state_s, c.threshold_s),
    ins AS (INSERT INTO dead_letters (dedup_key, execution_id, reason, queue, headers, body,
                                      body_text, error, snapshot)
            SELECT 'execution:' || c.id || ':' || c.attempt || '/staleness_timeout', c.id,
                   'staleness_timeout',
                   CASE WHEN c.worker IS NOT NULL THEN 'worker.' || c.worker || '.executions' END,
                   '{}', convert_to(c.snap::text, 'UTF8'), c.snap::text, c.error, c.snap
            FROM changed c ON CONFLICT (dedup_key) DO NOTHING RETURNING 1),
    warn AS (SELECT s.id, s.status, s.attempt, s.time_in_state_s, s.threshold_s
             FROM warren_staleness(cfg) s JOIN executions e ON e.id = s.id
             WHERE s.health = 'warning'
               AND e.staleness_warned IS DISTINCT FROM s.status || ':' || s.attempt
             ORDER BY s.id LIMIT lim),
    warned AS (UPDATE executions e SET staleness_warned = w.status || ':' || w.attempt
               FROM warn w WHERE e.id = w.id AND e.status = w.status AND e.attempt = w.attempt
               AND e.id IN (SELECT x.id FROM executions x JOIN warn w2 ON w2.id = x.id
                            FOR UPDATE OF x SKIP LOCKED)
               RETURNING e.id, e.status, e.worker, w.time_in_state_s, w.threshold_s)
    SELECT c.id, 'stale'::text, c.was, c.now, c.worker, c.time_in_state_s, c.threshold_s
        FROM changed c
    UNION ALL
    SELECT w.id, 'warning'::text, w.status, w.status, w.worker, w.time_in_state_s, w.threshold_s
        FROM warned w;
END
$$;
