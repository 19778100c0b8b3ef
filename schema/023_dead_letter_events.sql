-- warren schema 023: reliable dead-letter events (docs/dead-letters.md, "Events").
-- Every record is committed first; the executor then publishes an ExecutionDeadLettered event,
-- confirmed, to events.exchange and marks the record emitted. A record whose publish failed
-- stays unemitted and is published again (with backoff) once the broker is healthy: consumers
-- see every record at least once, and deduplicate on its event_id, which never changes.
ALTER TABLE dead_letters
    ADD COLUMN event_id uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN emitted_at timestamptz;

-- Records written before this migration are not announced: they predate the event stream.
UPDATE dead_letters SET emitted_at = now();

-- The emitter's and reconciler's work: unemitted records, oldest first.
CREATE INDEX dead_letters_unemitted_idx ON dead_letters (id) WHERE emitted_at IS NULL;

-- function warren_dl_event: schema/functions/130_dead_letter_documents.sql

-- The list item gains the event's id and when it was emitted.
-- function warren_dl_item: schema/functions/130_dead_letter_documents.sql
