-- warren schema 021: operating on dead letters (docs/dead-letters.md): the filter the API and
-- `warren dlq` share (list, stats, purge, bulk redrive), the documents they print, and redrive.

-- The execution's action, for filtering: from the snapshot taken when the record was written.
ALTER TABLE dead_letters ADD COLUMN action_ref text
    GENERATED ALWAYS AS (coalesce(investigation -> 'execution' ->> 'action_ref',
                                  snapshot ->> 'action_ref')) STORED;

-- Redrive: a new attempt of the execution through the scheduler. A record is redriven at most
-- once; it then links the attempt it asked for (the execution's next dispatch).
ALTER TABLE dead_letters
    ADD COLUMN redriven_at timestamptz,
    ADD COLUMN redrive_attempt integer;
-- Manual redrives of an execution: warren's own count (never the broker's x-death), apart from
-- the attempts the retry policy counts.
ALTER TABLE executions ADD COLUMN redrive_count integer NOT NULL DEFAULT 0
    CONSTRAINT executions_redrive_count_check CHECK (redrive_count >= 0);

-- function warren_dl_match: schema/functions/140_dead_letter_filter.sql
-- function warren_dl_item: schema/functions/130_dead_letter_documents.sql
-- function warren_dl_doc: schema/functions/130_dead_letter_documents.sql

CREATE INDEX dead_letters_queue_idx ON dead_letters (queue, id);
