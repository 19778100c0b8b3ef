-- warren schema 029: the happy path writes no history of its own (docs/schema.md, "History").
-- An execution that goes requested -> scheduled -> (running ->) completed costs its insert and
-- two row versions; its history is implied by the row's timestamps (created_at, scheduled_at,
-- started_at, ended_at) and read through execution_history. The trigger stores every other
-- step as before, and before storing one writes down the implied steps that led to it (from the
-- old row's timestamps, marked implied), so the stored rows and the implied tail always tell the
-- whole story in order. A completion on the first attempt leaves no execution_attempts row
-- either: execution_attempt_history implies it from the row.

-- function warren_history_happy: schema/functions/060_execution_history.sql
-- function warren_history_step: schema/functions/060_execution_history.sql

ALTER TABLE execution_events
    ADD COLUMN implied boolean NOT NULL DEFAULT false;  -- written later, from the row's timestamps

-- function warren_history_implied: schema/functions/060_execution_history.sql
-- function warren_execution_event: schema/functions/060_execution_history.sql
-- view execution_history: schema/functions/060_execution_history.sql

-- Since when the execution is in its status: its last applied history row, stored or implied.
-- function warren_state_since: schema/functions/080_staleness.sql
-- view execution_attempt_history: schema/functions/070_execution_attempt_history.sql

-- Indexes every row version paid for: warren list reads newest first by id (the primary key,
-- or executions_status_id_idx with a status), as the API does; the status index leaves out
-- completed rows, the bulk of the table, which a backwards scan of the primary key finds.
DROP INDEX executions_created_idx;
DROP INDEX executions_status_created_idx;
DROP INDEX executions_status_id_idx;
CREATE INDEX executions_status_id_idx ON executions (status, id) WHERE status <> 'completed';
-- The monitor's two sweeps of scheduled rows read them through executions_status_id_idx: rows in
-- flight are bounded by the workers' capacity, and an index of their own cost every dispatch
-- two more index entries.
DROP INDEX executions_scheduled_idx;
DROP INDEX executions_unconfirmed_idx;

-- The dead letter's snapshot (026) reads the whole history, implied steps included.
-- function warren_dl_snapshot: schema/functions/110_dead_letter_investigation.sql
