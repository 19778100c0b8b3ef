-- warren schema 028: a flood of unusable messages folds into one open record per shape
-- (docs/dead-letters.md, "Floods"). The executor gives every record of a folding reason (a
-- message nobody can use, or a report of a dispatch it never sent) a fold_key, "queue/reason"
-- of the queue it consumed it from, and inserts it with ON CONFLICT on the open record of that
-- key: a new record keeps the first message as its sample, an open one only counts
-- (occurrences, last_seen_at). Once closed (resolved in bulk, say) a record takes no more: the
-- next message of that shape opens a new one.
ALTER TABLE dead_letters
    ADD COLUMN fold_key text,
    ADD COLUMN occurrences bigint NOT NULL DEFAULT 1,
    ADD COLUMN last_seen_at timestamptz,
    ADD CONSTRAINT dead_letters_occurrences_check CHECK (occurrences >= 1);

CREATE UNIQUE INDEX dead_letters_open_fold_idx ON dead_letters (fold_key)
    WHERE fold_key IS NOT NULL AND resolution IN ('pending', 'investigating');

-- The list item gains the count and when the last message of the shape came.
CREATE OR REPLACE FUNCTION warren_dl_item(d dead_letters) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', d.id, 'execution_id', d.execution_id, 'reason', d.investigation_reason,
        'cause', d.reason, 'resolution', d.resolution, 'queue', d.queue, 'action', d.action_ref,
        'received_at', d.received_at, 'resolved_at', d.resolved_at, 'resolved_by', d.resolved_by,
        'notes', d.notes, 'error', d.error, 'metadata', d.metadata, 'message_id', d.message_id,
        'redriven_at', d.redriven_at, 'redrive_attempt', d.redrive_attempt,
        'event_id', d.event_id, 'emitted_at', d.emitted_at,
        'occurrences', d.occurrences, 'last_seen_at', d.last_seen_at,
        'age_s', round(extract(epoch FROM now() - d.received_at)::numeric, 3))
$$;
