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

-- Does record d match filter f? f is a JSON object whose absent or null members match
-- anything: resolution, reason (the investigation word), queue, action, execution_id, since and
-- until (received_at, RFC 3339), q (case-insensitive text in body, error or notes), ids (an
-- array of record ids), below (ids below this: the cursor).
CREATE FUNCTION warren_dl_match(d dead_letters, f jsonb) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT (f ->> 'resolution' IS NULL OR d.resolution = f ->> 'resolution')
       AND (f ->> 'reason' IS NULL OR d.investigation_reason = f ->> 'reason')
       AND (f ->> 'queue' IS NULL OR d.queue = f ->> 'queue')
       AND (f ->> 'action' IS NULL OR d.action_ref = f ->> 'action')
       AND (f ->> 'execution_id' IS NULL OR d.execution_id = (f ->> 'execution_id')::bigint)
       AND (f ->> 'since' IS NULL OR d.received_at >= (f ->> 'since')::timestamptz)
       AND (f ->> 'until' IS NULL OR d.received_at < (f ->> 'until')::timestamptz)
       AND (f ->> 'below' IS NULL OR d.id < (f ->> 'below')::bigint)
       AND (f ->> 'q' IS NULL OR strpos(lower(concat_ws(' ', d.body_text, d.error, d.notes)),
                                        lower(f ->> 'q')) > 0)
       AND (jsonb_typeof(f -> 'ids') IS DISTINCT FROM 'array'
            OR d.id IN (SELECT jsonb_array_elements_text(f -> 'ids')::bigint))
$$;

-- A record as list prints it.
CREATE FUNCTION warren_dl_item(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', d.id, 'execution_id', d.execution_id, 'reason', d.investigation_reason,
        'cause', d.reason, 'resolution', d.resolution, 'queue', d.queue, 'action', d.action_ref,
        'received_at', d.received_at, 'resolved_at', d.resolved_at, 'resolved_by', d.resolved_by,
        'notes', d.notes, 'error', d.error, 'metadata', d.metadata, 'message_id', d.message_id,
        'redriven_at', d.redriven_at, 'redrive_attempt', d.redrive_attempt,
        'age_s', round(extract(epoch FROM now() - d.received_at)::numeric, 3))
$$;

-- A record as show prints it: the item, the raw message and the snapshot.
CREATE FUNCTION warren_dl_doc(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT warren_dl_item(d) || jsonb_build_object(
        'dedup_key', d.dedup_key, 'routing_key', d.routing_key, 'exchange', d.exchange,
        'message_type', d.message_type, 'headers', d.headers, 'body_text', d.body_text,
        'body_base64', translate(encode(d.body, 'base64'), E'\n', ''), 'execution_row', d.snapshot,
        'snapshot', d.investigation, 'updated_at', d.updated_at)
$$;

CREATE INDEX dead_letters_queue_idx ON dead_letters (queue, id);
