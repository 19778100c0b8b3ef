-- warren schema 006: a late completion of an abandoned attempt is accepted, and its history row
-- says so (see docs/executor.md). An execution is abandoned when the executor loses sight of its
-- worker (stale heartbeats, a restarted worker, no result past its timeout), but the worker may
-- still finish it; the executor then accepts the completion of the SAME attempt (the attempt
-- fence and the transition table in src/executor/transitions.c decide), and the history keeps
-- both steps: running -> abandoned, then abandoned -> completed with the note 'late completion'.
ALTER TABLE execution_events ADD COLUMN note text;

CREATE OR REPLACE FUNCTION warren_execution_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error)
        VALUES (NEW.id, NULL, NEW.status, NEW.worker, NEW.attempt, NEW.error);
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error,
                                      note)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.worker, NEW.attempt, NEW.error,
                CASE WHEN OLD.status = 'abandoned' THEN 'late completion' END);
    END IF;
    RETURN NULL;
END
$$;
