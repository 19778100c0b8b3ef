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

-- The event's payload for a record.
CREATE FUNCTION warren_dl_event(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'event_id', d.event_id, 'dead_letter_id', d.id, 'execution_id', d.execution_id,
        'reason', d.investigation_reason, 'cause', d.reason, 'resolution', d.resolution,
        'queue', d.queue, 'action', d.action_ref, 'received_at', d.received_at,
        'error', d.error, 'message_id', d.message_id, 'attempt', d.snapshot -> 'attempt')
$$;

-- The list item gains the event's id and when it was emitted.
CREATE OR REPLACE FUNCTION warren_dl_item(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', d.id, 'execution_id', d.execution_id, 'reason', d.investigation_reason,
        'cause', d.reason, 'resolution', d.resolution, 'queue', d.queue, 'action', d.action_ref,
        'received_at', d.received_at, 'resolved_at', d.resolved_at, 'resolved_by', d.resolved_by,
        'notes', d.notes, 'error', d.error, 'metadata', d.metadata, 'message_id', d.message_id,
        'redriven_at', d.redriven_at, 'redrive_attempt', d.redrive_attempt,
        'event_id', d.event_id, 'emitted_at', d.emitted_at,
        'age_s', round(extract(epoch FROM now() - d.received_at)::numeric, 3))
$$;
