-- warren schema 034: redrive tasks that stop themselves (docs/dead-letters.md, "Canary").
-- A task with canary_count > 0 redrives that many records first, waits until their new attempts
-- end, and pauses as paused_canary when more than max_failure_ratio of them failed; an operator
-- resumes it (the rest, no second canary) or cancels it. Every record a task touches gets an
-- item: moved (with the new attempt's outcome once it ends) or skipped, and why.
ALTER TABLE redrive_tasks
    ADD COLUMN canary_count      integer          NOT NULL DEFAULT 0,
    ADD COLUMN max_failure_ratio double precision NOT NULL DEFAULT 0,
    -- none (no canary), redriving, waiting (for the canary's attempts to end), passed,
    -- failed (the task is paused_canary), resumed (an operator went on after a failure)
    ADD COLUMN canary_state      text             NOT NULL DEFAULT 'none',
    ADD COLUMN canary_failures   jsonb,           -- the canary's failed items, once it ended
    ADD COLUMN resumed_by        text,
    ADD COLUMN resumed_at        timestamptz,
    ADD CONSTRAINT redrive_tasks_canary_check CHECK (canary_count >= 0
        AND max_failure_ratio >= 0 AND max_failure_ratio <= 1),
    ADD CONSTRAINT redrive_tasks_canary_state_check CHECK (canary_state IN (
        'none', 'redriving', 'waiting', 'passed', 'failed', 'resumed'));

ALTER TABLE redrive_tasks DROP CONSTRAINT redrive_tasks_status_check,
    ADD CONSTRAINT redrive_tasks_status_check CHECK (status IN (
        'running', 'completed', 'cancelling', 'cancelled', 'failed', 'paused_canary'));

-- A paused task still holds its source: the records it left are its own until it is resumed
-- or cancelled.
DROP INDEX redrive_tasks_one_active_idx;
CREATE UNIQUE INDEX redrive_tasks_one_active_idx ON redrive_tasks (source)
    WHERE status IN ('running', 'cancelling', 'paused_canary');

CREATE TABLE redrive_task_items (
    task_id       bigint      NOT NULL REFERENCES redrive_tasks (id) ON DELETE CASCADE,
    record_id     bigint      NOT NULL,  -- no reference: a record may be purged later
    execution_id  bigint,
    canary        boolean     NOT NULL DEFAULT false,
    result        text        NOT NULL,  -- moved, skipped
    -- skipped: already_redriven, closed, no_execution, moved_on, not_found, max_redrives
    skip_reason   text,
    detail        text,                  -- the refusal's sentence
    attempt       integer,               -- moved: the new attempt
    redrive_count integer,               -- moved: the execution's redrive_count after it
    -- moved: the execution's terminal status when the redriven run ended (NULL until then)
    outcome       text,
    error         text,
    ended_at      timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, record_id),
    CONSTRAINT redrive_task_items_result_check CHECK (result IN ('moved', 'skipped')
        AND (result = 'skipped') = (skip_reason IS NOT NULL))
);

-- The moved items whose outcome is still to be read (the executor's redrive job fills them).
CREATE INDEX redrive_task_items_open_idx ON redrive_task_items (execution_id)
    WHERE result = 'moved' AND outcome IS NULL;
