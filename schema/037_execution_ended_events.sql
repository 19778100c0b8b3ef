-- warren schema 037: an ExecutionEnded event for every terminal transition (docs/api.md,
-- "Completion events"). The transaction that ends an execution also writes its event here
-- (trigger executions_ended_event), so no end goes unannounced whichever path ended it: a
-- result, a cancel, a dead letter, the monitor, a completion by hand. The executor's emitter
-- publishes each row, confirmed, to events.exchange and deletes the confirmed ones; a failed
-- publish leaves them for the next round (at least once; consumers deduplicate on event_id).
-- The body is the snapshot at the end: a retry that ends again writes a second event.
-- Typed columns, not a JSON body: a row costs about half the WAL (the emitter builds the body).
-- The event id is derived from id (md5 as a uuid): stable however often it is published.
CREATE TABLE execution_ended_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id bigint NOT NULL,
    attempt integer NOT NULL,
    status text NOT NULL,
    action_ref text NOT NULL,
    worker text,
    result_bytes integer NOT NULL,
    error text,
    created_at timestamptz NOT NULL,
    started_at timestamptz,
    ended_at timestamptz
);

-- function warren_ended_event: schema/functions/196_execution_ended_events.sql
-- trigger executions_ended_event: schema/functions/196_execution_ended_events.sql
