-- warren schema 025: where retries (015-017) meet the dead-letter workflow (020-024).
--
-- 1. A retired worker's message (worker_retired, 017) is an execution whose worker went away:
--    worker_unavailable, not poison.
CREATE OR REPLACE FUNCTION warren_dl_investigation_reason(reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason IN ('expired', 'maxlen', 'delivery_limit', 'dead_lettered', 'worker_retired')
            THEN 'worker_unavailable'
        WHEN reason IN ('rejected', 'scheduled_timeout', 'running_timeout', 'timeout')
            THEN 'timeout'
        WHEN reason IN ('worker_stale', 'worker_restarted', 'abandoned') THEN 'abandoned'
        WHEN reason IN ('max_retries_exceeded', 'staleness_timeout', 'unprocessable_result',
                        'poison_message', 'worker_unavailable', 'manual') THEN reason
        WHEN reason IN ('execution_terminal', 'execution_started', 'stale_attempt',
                        'stale_attempt_result', 'wrong_worker', 'status_conflict') THEN NULL
        ELSE 'poison_message'
    END
$$;
UPDATE dead_letters SET investigation_reason = 'worker_unavailable'
    WHERE reason = 'worker_retired' AND investigation_reason IS DISTINCT FROM 'worker_unavailable';

-- 2. The snapshot's retry delays: the delay each ended attempt's policy applied, in order.
CREATE OR REPLACE FUNCTION warren_dl_retry_delays(execution_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object('attempt', a.attempt, 'delay_ms', a.delay_ms,
                                                 'next_due_at', a.next_due_at)
                              ORDER BY a.id) FILTER (WHERE a.delay_ms IS NOT NULL), '[]')
    FROM execution_attempts a WHERE a.execution_id = warren_dl_retry_delays.execution_id
$$;

-- 3. A record that nobody has picked up yet needs nobody once its execution completes after
--    all (a retry or a redispatch after the worker was lost, a manual retry): closed as
--    cancelled by warren, with a note. Records someone is investigating stay as they are.
--    One statement per UPDATE of executions (a transition table; a column list is not
--    allowed with one), a probe of dead_letters_one_pending_idx per completed row.
CREATE FUNCTION warren_dl_close_completed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dead_letters d
       SET resolution = 'cancelled', resolved_by = 'warren',
           notes = coalesce(d.notes || E'\n', '')
                   || format('execution completed at attempt %s: no investigation needed', n.attempt)
      FROM new_rows n
     WHERE n.status = 'completed' AND d.execution_id = n.id AND d.resolution = 'pending';
    RETURN NULL;
END
$$;

CREATE TRIGGER executions_close_dead_letters
    AFTER UPDATE ON executions REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION warren_dl_close_completed();
