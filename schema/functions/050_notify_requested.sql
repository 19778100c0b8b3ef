-- warren definitions: new work is announced on channel warren_requested (schema 012).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Work is claimed when it arrives, not at the next poll (docs/executor.md). Every statement
-- that inserts executions tells the executors listening on channel warren_requested, once per
-- statement: a batch of 1,000 is one notification, and PostgreSQL folds identical
-- notifications of one transaction into one. The payload is empty; the scheduler's claim
-- decides what is due. Delivered at COMMIT only, so a listener never claims before the rows are
-- visible.
CREATE OR REPLACE FUNCTION warren_notify_requested() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('warren_requested', '');
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER executions_notify_requested
    AFTER INSERT ON executions
    FOR EACH STATEMENT EXECUTE FUNCTION warren_notify_requested();
