-- warren definitions: executions: updated_at, and ended_at of a terminal row.
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

CREATE OR REPLACE FUNCTION warren_executions_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    IF NEW.status IN ('completed', 'failed', 'cancelled', 'timeout', 'abandoned')
       AND NEW.ended_at IS NULL THEN
        NEW.ended_at := now();
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER executions_stamp BEFORE INSERT OR UPDATE ON executions
    FOR EACH ROW EXECUTE FUNCTION warren_executions_stamp();
