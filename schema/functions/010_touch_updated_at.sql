-- warren definitions: updated_at kept honest on workers.
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Keeps updated_at honest whichever code path writes the row.
CREATE OR REPLACE FUNCTION warren_touch_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER workers_touch BEFORE UPDATE ON workers
    FOR EACH ROW EXECUTE FUNCTION warren_touch_updated_at();
