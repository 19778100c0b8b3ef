-- warren schema 030: a record's queue and reason from an x-death header are a claim until the
-- broker is known to have written it (docs/dead-letters.md, "Where a record comes from"). The
-- executor sets x_death_verified when it records a dead letter that has an x-death: true when
-- the message came the broker's way (a dispatch of the executor's, dead-lettered from a worker
-- queue through the dead-letter exchange), false for a header anyone could have written (for
-- instance published straight into the dead-letter queue). NULL: no x-death, or a record of
-- before this migration.
ALTER TABLE dead_letters ADD COLUMN x_death_verified boolean;

-- The list item (API and `warren dlq`) shows it beside queue and reason.
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
