-- warren definitions: dead_letters: updated_at, and resolved_at of a closed record.
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

CREATE OR REPLACE FUNCTION warren_dead_letters_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    IF NEW.resolution NOT IN ('pending', 'investigating') AND NEW.resolved_at IS NULL THEN
        NEW.resolved_at := now();
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER dead_letters_stamp BEFORE INSERT OR UPDATE ON dead_letters
    FOR EACH ROW EXECUTE FUNCTION warren_dead_letters_stamp();
