-- warren definitions: every terminal transition writes its ExecutionEnded event (schema 037).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- What the event's body says (docs/api.md "Completion events"): the execution's id, status,
-- attempt, action, worker, the size of its result, its error (at most 4,096 characters) and
-- its times, as they are at this end, and the trace context given on submit (schema 038). Only rows that become terminal fire it (the trigger's WHEN), so the other
-- transitions of the hot path pay nothing.
CREATE OR REPLACE FUNCTION warren_ended_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO execution_ended_events (execution_id, attempt, status, action_ref, worker,
                                        result_bytes, error, created_at, started_at, ended_at,
                                        traceparent)
    VALUES (NEW.id, NEW.attempt, NEW.status, NEW.action_ref, NEW.worker,
            CASE WHEN NEW.result IS NULL THEN 0 ELSE octet_length(NEW.result::text) END,
            left(NEW.error, 4096), NEW.created_at, NEW.started_at, NEW.ended_at,
            NEW.traceparent);
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER executions_ended_event
    AFTER UPDATE OF status ON executions
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled', 'timeout', 'abandoned')
          AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION warren_ended_event();
