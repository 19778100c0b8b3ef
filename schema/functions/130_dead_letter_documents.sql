-- warren definitions: a record as list, show and the event print it (schema 021, 023, 028, 030).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- A record as list prints it.
CREATE OR REPLACE FUNCTION warren_dl_item(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', d.id, 'execution_id', d.execution_id, 'reason', d.investigation_reason,
        'cause', d.reason, 'resolution', d.resolution, 'queue', d.queue,
        'x_death_verified', d.x_death_verified, 'action', d.action_ref,
        'received_at', d.received_at, 'resolved_at', d.resolved_at, 'resolved_by', d.resolved_by,
        'notes', d.notes, 'error', d.error, 'metadata', d.metadata, 'message_id', d.message_id,
        'redriven_at', d.redriven_at, 'redrive_attempt', d.redrive_attempt,
        'event_id', d.event_id, 'emitted_at', d.emitted_at,
        'occurrences', d.occurrences, 'last_seen_at', d.last_seen_at,
        'age_s', round(extract(epoch FROM now() - d.received_at)::numeric, 3))
$$;

-- A record as show prints it: the item, the raw message and the snapshot.
CREATE OR REPLACE FUNCTION warren_dl_doc(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT warren_dl_item(d) || jsonb_build_object(
        'dedup_key', d.dedup_key, 'routing_key', d.routing_key, 'exchange', d.exchange,
        'message_type', d.message_type, 'headers', d.headers, 'body_text', d.body_text,
        'body_base64', translate(encode(d.body, 'base64'), E'\n', ''), 'execution_row', d.snapshot,
        'snapshot', d.investigation, 'updated_at', d.updated_at)
$$;

-- The event's payload for a record.
CREATE OR REPLACE FUNCTION warren_dl_event(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'event_id', d.event_id, 'dead_letter_id', d.id, 'execution_id', d.execution_id,
        'reason', d.investigation_reason, 'cause', d.reason, 'resolution', d.resolution,
        'queue', d.queue, 'action', d.action_ref, 'received_at', d.received_at,
        'error', d.error, 'message_id', d.message_id, 'attempt', d.snapshot -> 'attempt')
$$;
