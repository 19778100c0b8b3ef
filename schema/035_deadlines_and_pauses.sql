-- warren schema 035: deadlines on waiting and paused actions (docs/flow-control.md).
-- queue_timeout_s: the longest an execution may wait, from its due time, before a worker starts
-- it (given on submit, or the action's actions.<ref>.queue_timeout_s, resolved when it is
-- inserted); NULL: no deadline. A retry's deadline counts from the retry's due time.
ALTER TABLE executions
    ADD COLUMN queue_timeout_s integer
        CONSTRAINT executions_queue_timeout_check CHECK (queue_timeout_s BETWEEN 1 AND 31622400);

-- The deadline sweep reads only the requested rows that have a deadline.
CREATE INDEX executions_queue_deadline_idx ON executions (due_at)
    WHERE status = 'requested' AND queue_timeout_s IS NOT NULL;

-- Pausing an action: while resumed_at is NULL the scheduler claims none of its executions.
-- One row per action ever paused, shared by every executor; resuming keeps the row with who
-- resumed it and when (the staleness of its waiting executions counts from then).
CREATE TABLE action_pauses (
    action_ref text PRIMARY KEY,
    paused_by  text NOT NULL,
    paused_at  timestamptz NOT NULL DEFAULT now(),
    resumed_by text,
    resumed_at timestamptz
);
