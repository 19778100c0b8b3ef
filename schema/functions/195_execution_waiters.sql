-- warren definitions: ended executions are announced on channel warren_ended while anyone waits
-- (schema 036). The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Once per statement that sets executions.status, and only while a registration in
-- execution_waiters is current: the payload is empty, the waiters look at their own rows. A
-- waiter registers and reads its row's status in one transaction under FOR SHARE, so a
-- transition either is seen by that read or runs this check after the registration is visible.
CREATE OR REPLACE FUNCTION warren_notify_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM execution_waiters WHERE until > now()) THEN
        PERFORM pg_notify('warren_ended', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER executions_notify_ended
    AFTER UPDATE OF status ON executions
    FOR EACH STATEMENT EXECUTE FUNCTION warren_notify_ended();
