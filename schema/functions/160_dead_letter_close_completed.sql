-- warren definitions: a pending record closes when its execution completes (schema 025, 026, 031).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- A record that nobody has picked up yet needs nobody once its execution completes after all
-- (a retry or a redispatch after the worker was lost, a manual retry): closed as cancelled by
-- warren, with a note. Records someone is investigating stay as they are. A row trigger with a
-- WHEN (026): only an update that makes a row completed queues an event, and its probe is one
-- lookup in dead_letters_one_pending_idx.
-- An execution an operator completed by hand (completed_by, schema 031) closes every open
-- record of it, investigating ones too, as manually_resolved by that operator: they ended it.
CREATE OR REPLACE FUNCTION warren_dl_close_completed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.completed_by IS NOT NULL THEN
        UPDATE dead_letters d
           SET resolution = 'manually_resolved', resolved_by = NEW.completed_by,
               notes = coalesce(d.notes || E'\n', '')
                       || format('execution completed by hand by %s at attempt %s',
                                 NEW.completed_by, NEW.attempt)
         WHERE d.execution_id = NEW.id AND d.resolution IN ('pending', 'investigating');
        RETURN NULL;
    END IF;
    UPDATE dead_letters d
       SET resolution = 'cancelled', resolved_by = 'warren',
           notes = coalesce(d.notes || E'\n', '')
                   || format('execution completed at attempt %s: no investigation needed',
                             NEW.attempt)
     WHERE d.execution_id = NEW.id AND d.resolution = 'pending';
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER executions_close_dead_letters
    AFTER UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.status = 'completed' AND OLD.status IS DISTINCT FROM 'completed')
    EXECUTE FUNCTION warren_dl_close_completed();
