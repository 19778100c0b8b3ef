-- warren schema 020: dead letters as investigation records (docs/dead-letters.md).
-- Every dead_letters row keeps its detailed `reason` (the word its writer chose, which tests
-- and metrics group by) and gains `investigation_reason`, the word an investigator works
-- with: worker_unavailable, timeout, abandoned, max_retries_exceeded, staleness_timeout,
-- poison_message, unprocessable_result or manual. Rows that changed nothing (a leftover copy
-- of a dispatch, a report of an older attempt) need nobody: their investigation_reason is NULL
-- and they are closed on insert (resolution cancelled, resolved_by 'warren').
-- A trigger sets both on insert, so every writer (the dead-letter handler, the result and
-- heartbeat consumers, the monitor's SQL) gets them without knowing, and builds the snapshot.

-- The investigation word of a detailed reason; NULL: the row needs no investigation.
CREATE FUNCTION warren_dl_investigation_reason(reason text) RETURNS text
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

-- How urgent a reason is, for the investigation queue's priority score.
CREATE FUNCTION warren_dl_reason_weight(reason text) RETURNS integer
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

-- The retry delays the retry policy applied to an execution, for the snapshot. The retry
-- policy (issue 8) redefines it; until then no delays are applied.
CREATE FUNCTION warren_dl_retry_delays(execution_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$ SELECT '[]'::jsonb $$;

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

CREATE FUNCTION warren_dl_snapshot(d dead_letters) RETURNS jsonb
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
        'retry_delays', CASE WHEN d.execution_id IS NULL THEN '[]'::jsonb
                             ELSE warren_dl_retry_delays(d.execution_id) END,
        'breakers', CASE WHEN coalesce(current_setting('warren.breakers', true), '') <> ''
                         THEN current_setting('warren.breakers', true)::jsonb END,
        'taken_at', now())
$$;

-- On insert: the investigation word, the snapshot, and at most one pending record per
-- execution (a second one is kept, closed, pointing at the pending one).
CREATE FUNCTION warren_dead_letters_investigate() RETURNS trigger
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
CREATE TRIGGER dead_letters_aa_investigate BEFORE INSERT ON dead_letters
    FOR EACH ROW EXECUTE FUNCTION warren_dead_letters_investigate();

-- Rows written before: their word, informational ones closed, one pending per execution.
UPDATE dead_letters SET investigation_reason = warren_dl_investigation_reason(reason),
    investigation = warren_dl_snapshot(dead_letters);
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

-- Dashboards: records by reason and resolution.
CREATE VIEW dead_letter_counts AS
    SELECT investigation_reason AS reason, resolution, count(*) AS count,
           min(received_at) AS oldest, max(received_at) AS newest
    FROM dead_letters GROUP BY investigation_reason, resolution;

-- The investigation queue: open records, most urgent first. priority = the reason's weight x
-- (1 + ln(1 + age in minutes)): a poison message outranks an expiry of the same age, and a
-- record climbs as it waits.
CREATE VIEW dead_letter_investigation_queue AS
    SELECT d.id, d.execution_id, d.investigation_reason AS reason, d.reason AS cause,
           d.resolution, d.queue, d.received_at,
           extract(epoch FROM now() - d.received_at) AS age_s,
           round((warren_dl_reason_weight(d.investigation_reason)
                  * (1 + ln(1 + extract(epoch FROM now() - d.received_at) / 60)))::numeric, 3)
               AS priority
    FROM dead_letters d
    WHERE d.resolution IN ('pending', 'investigating') AND d.investigation_reason IS NOT NULL
    ORDER BY priority DESC, d.id;
