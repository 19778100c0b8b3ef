-- warren definitions: bulk redrive tasks (schema 024).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

CREATE OR REPLACE FUNCTION warren_redrive_tasks_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    IF NEW.status IN ('completed', 'cancelled', 'failed') AND NEW.finished_at IS NULL THEN
        NEW.finished_at := now();
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER redrive_tasks_stamp BEFORE INSERT OR UPDATE ON redrive_tasks
    FOR EACH ROW EXECUTE FUNCTION warren_redrive_tasks_stamp();

-- Records a task may redrive: open, not redriven, naming an execution.
CREATE OR REPLACE FUNCTION warren_dl_redrivable(d dead_letters) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT d.resolution IN ('pending', 'investigating') AND d.redriven_at IS NULL
       AND d.execution_id IS NOT NULL
$$;
