-- warren schema 002: execution history, one row per status change (see docs/schema.md).
-- Written by a trigger so no code path can change a status without leaving a trace.

CREATE TABLE execution_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id bigint      NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    at           timestamptz NOT NULL DEFAULT now(),
    from_status  text,                  -- NULL for the insert that created the execution
    to_status    text        NOT NULL,
    worker       text,
    attempt      integer     NOT NULL,
    error        text
);

-- `warren get N` shows the history of one execution in order.
CREATE INDEX execution_events_execution_idx ON execution_events (execution_id, id);

CREATE FUNCTION warren_execution_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error)
        VALUES (NEW.id, NULL, NEW.status, NEW.worker, NEW.attempt, NEW.error);
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.worker, NEW.attempt, NEW.error);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER executions_event AFTER INSERT OR UPDATE OF status ON executions
    FOR EACH ROW EXECUTE FUNCTION warren_execution_event();
