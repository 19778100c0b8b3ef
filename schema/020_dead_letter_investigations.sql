-- warren schema 020: dead letters as investigation records (docs/dead-letters.md).
-- Every dead_letters row keeps its detailed `reason` (the word its writer chose, which tests
-- and metrics group by) and gains `investigation_reason`, the word an investigator works
-- with: worker_unavailable, timeout, abandoned, max_retries_exceeded, staleness_timeout,
-- poison_message, unprocessable_result or manual. Rows that changed nothing (a leftover copy
-- of a dispatch, a report of an older attempt) need nobody: their investigation_reason is NULL
-- and they are closed on insert (resolution cancelled, resolved_by 'warren').
-- A trigger sets both on insert, so every writer (the dead-letter handler, the result and
-- heartbeat consumers, the monitor's SQL) gets them without knowing, and builds the snapshot.

-- function warren_dl_investigation_reason: schema/functions/110_dead_letter_investigation.sql
-- function warren_dl_reason_weight: schema/functions/110_dead_letter_investigation.sql
-- function warren_dl_retry_delays: schema/functions/110_dead_letter_investigation.sql

ALTER TABLE dead_letters
    ADD COLUMN investigation_reason text,
    -- The investigator's snapshot: the execution row, every attempt with its worker and error,
    -- the history, the parsed x-death, the raw headers and body, the stderr tail, the retry
    -- delays and the breaker states (warren.breakers, set by the writer) at insert time.
    ADD COLUMN investigation jsonb,
    ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}',
    ADD CONSTRAINT dead_letters_investigation_reason_check CHECK (investigation_reason IN (
        'worker_unavailable', 'timeout', 'abandoned', 'max_retries_exceeded',
        'staleness_timeout', 'poison_message', 'unprocessable_result', 'manual')),
    ADD CONSTRAINT dead_letters_metadata_check CHECK (jsonb_typeof(metadata) = 'object');

-- function warren_dl_snapshot: schema/functions/110_dead_letter_investigation.sql
-- function warren_dead_letters_investigate: schema/functions/110_dead_letter_investigation.sql
-- trigger dead_letters_aa_investigate: schema/functions/110_dead_letter_investigation.sql

-- Rows written before: their word, informational ones closed, one pending per execution. The
-- word and the snapshot as this migration defined them, in temporary functions of this session
-- (dropped below): the definitions in schema/functions/ are the current ones, applied after the
-- numbered migration, and may read columns a database at 019 does not have yet.
CREATE FUNCTION pg_temp.warren_020_investigation_reason(reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason IN ('expired', 'maxlen', 'delivery_limit', 'dead_lettered')
            THEN 'worker_unavailable'
        WHEN reason IN ('rejected', 'scheduled_timeout', 'running_timeout', 'timeout')
            THEN 'timeout'
        WHEN reason IN ('worker_stale', 'worker_restarted', 'abandoned') THEN 'abandoned'
        WHEN reason IN ('max_retries_exceeded', 'staleness_timeout', 'unprocessable_result',
                        'poison_message', 'worker_unavailable', 'manual') THEN reason
        WHEN reason IN ('execution_terminal', 'execution_started', 'stale_attempt',
                        'stale_attempt_result', 'wrong_worker', 'status_conflict') THEN NULL
        ELSE 'poison_message' -- parse_error, unknown_type, missing_execution_id, oversized,
                              -- store_error, execution_missing, forged_identity, unknown words
    END
$$;

CREATE FUNCTION pg_temp.warren_020_snapshot(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'execution', (SELECT to_jsonb(e) FROM executions e WHERE e.id = d.execution_id),
        'attempts', coalesce((SELECT jsonb_agg(a ORDER BY a.attempt) FROM (
            SELECT v.attempt,
                   (array_agg(v.worker ORDER BY v.id DESC) FILTER (WHERE v.worker IS NOT NULL))[1]
                       AS worker,
                   (array_agg(v.error ORDER BY v.id DESC) FILTER (WHERE v.error IS NOT NULL))[1]
                       AS error,
                   (array_agg(v.to_status ORDER BY v.id DESC))[1] AS status,
                   min(v.at) AS first_at, max(v.at) AS last_at
            FROM execution_events v WHERE v.execution_id = d.execution_id
            GROUP BY v.attempt) a), '[]'),
        'history', coalesce((SELECT jsonb_agg(to_jsonb(v) - 'execution_id' ORDER BY v.id)
                             FROM execution_events v WHERE v.execution_id = d.execution_id), '[]'),
        'x_death', coalesce(CASE WHEN jsonb_typeof(d.headers -> 'x-death') = 'array'
                                 THEN d.headers -> 'x-death' END, '[]'),
        'headers', d.headers,
        'body_text', d.body_text,
        'body_base64', translate(encode(d.body, 'base64'), E'\n', ''),
        'stderr_tail', (SELECT e.outcome -> 'stderr_tail' FROM executions e
                        WHERE e.id = d.execution_id),
        'retry_delays', '[]'::jsonb, -- no retry policy yet (015's delays came with 025)
        'breakers', CASE WHEN coalesce(current_setting('warren.breakers', true), '') <> ''
                         THEN current_setting('warren.breakers', true)::jsonb END,
        'taken_at', now())
$$;

UPDATE dead_letters SET investigation_reason = pg_temp.warren_020_investigation_reason(reason),
    investigation = pg_temp.warren_020_snapshot(dead_letters);
DROP FUNCTION pg_temp.warren_020_snapshot(dead_letters);
DROP FUNCTION pg_temp.warren_020_investigation_reason(text);
UPDATE dead_letters SET resolution = 'cancelled', resolved_by = 'warren',
    notes = coalesce(notes, format('changed nothing (%s): no investigation needed', reason))
    WHERE investigation_reason IS NULL AND resolution IN ('pending', 'investigating');
UPDATE dead_letters d SET resolution = 'cancelled', resolved_by = 'warren',
    notes = coalesce(d.notes, 'a newer record is pending for this execution')
    WHERE d.resolution = 'pending' AND d.execution_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM dead_letters n WHERE n.execution_id = d.execution_id
        AND n.resolution = 'pending' AND n.id > d.id);

CREATE UNIQUE INDEX dead_letters_one_pending_idx ON dead_letters (execution_id)
    WHERE resolution = 'pending' AND execution_id IS NOT NULL;
CREATE INDEX dead_letters_investigation_idx ON dead_letters (investigation_reason, id);

-- view dead_letter_counts: schema/functions/120_dead_letter_views.sql
-- view dead_letter_investigation_queue: schema/functions/120_dead_letter_views.sql
