-- warren schema 010: cancelling an execution (see docs/executor.md, "Cancel").
-- Who asked (the API key's name, or cli:<os user> for `warren cancel` on the database URL) and
-- when: a running execution stays `canceling` until its worker reports, and the monitor uses
-- the time to re-send the worker's control message.
ALTER TABLE executions ADD COLUMN cancelled_by text;
ALTER TABLE executions ADD COLUMN cancel_requested_at timestamptz;

-- What a worker reported after the cancel and that changed nothing (a `running` or a
-- completion that lost the race) stays in the history: a row with applied = false and a note
-- (the column of schema 006). Every row the status trigger writes is applied.
ALTER TABLE execution_events ADD COLUMN applied boolean NOT NULL DEFAULT true;
