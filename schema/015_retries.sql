-- warren schema 015: retries (docs/retries.md).
-- An attempt that fails, times out or loses its worker may be retried: the transaction that ends
-- it decides (the retry policy, warren/retry.h) and moves the row back to requested with the time
-- the next attempt is due. The scheduler claims requested rows only once they are due.
ALTER TABLE executions
    ADD COLUMN due_at timestamptz NOT NULL DEFAULT now(),  -- the scheduler claims it from then
    ADD COLUMN retries integer NOT NULL DEFAULT 0          -- automatic retries so far
        CONSTRAINT executions_retries_check CHECK (retries >= 0),
    ADD COLUMN manual_retries integer NOT NULL DEFAULT 0   -- `warren retry`, kept apart
        CONSTRAINT executions_manual_retries_check CHECK (manual_retries >= 0),
    -- What the next (or current) attempt is: the first, an automatic retry, a manual one.
    ADD COLUMN attempt_kind text NOT NULL DEFAULT 'first'
        CONSTRAINT executions_attempt_kind_check CHECK (attempt_kind IN ('first', 'retry', 'manual')),
    -- The submission's own policy overrides (NULL: the configuration's policy of the action).
    ADD COLUMN retry_max_attempts integer
        CONSTRAINT executions_retry_max_attempts_check CHECK (retry_max_attempts BETWEEN 1 AND 1000),
    ADD COLUMN retry_on text
        CONSTRAINT executions_retry_on_check CHECK (retry_on ~
            '^(tempfail|failed|timeout|worker_lost)(,(tempfail|failed|timeout|worker_lost))*$'),
    -- 'any': a pinned execution whose worker is lost may be retried on any worker.
    ADD COLUMN fallback text
        CONSTRAINT executions_fallback_check CHECK (fallback IN ('any'));

-- The scheduler's claim: requested rows that are due, in due order, one partial index scan
-- (replaces executions_requested_idx and executions_requested_pinned_idx of schemas 001, 005).
DROP INDEX executions_requested_idx;
DROP INDEX executions_requested_pinned_idx;
CREATE INDEX executions_due_idx ON executions (due_at, id) WHERE status = 'requested';
CREATE INDEX executions_due_pinned_idx ON executions (due_at, id)
    WHERE status = 'requested' AND pinned_worker IS NOT NULL;

-- Every attempt that ended, written in the transaction that ended it (one statement per batch).
CREATE TABLE execution_attempts (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id   bigint      NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    attempt        integer     NOT NULL,  -- executions.attempt of its dispatch
    kind           text        NOT NULL,  -- first, retry, manual
    worker         text,
    incarnation    text,
    scheduled_at   timestamptz,
    started_at     timestamptz,
    ended_at       timestamptz NOT NULL DEFAULT now(),
    status         text        NOT NULL,  -- the status it ended in
    outcome        text        NOT NULL,  -- completed, tempfail, failed, timeout, worker_lost, cancelled
    error          text,
    exit_code      integer,
    decision       text,                  -- retry, not_retryable, never_retry, exhausted, ...
    delay_ms       bigint,                -- the delay applied before the next attempt
    next_due_at    timestamptz,
    x_death        jsonb,                 -- the broker's x-death of every hop, when it expired
    CONSTRAINT execution_attempts_outcome_check CHECK (outcome IN (
        'completed', 'tempfail', 'failed', 'timeout', 'worker_lost', 'cancelled')),
    CONSTRAINT execution_attempts_kind_check CHECK (kind IN ('first', 'retry', 'manual'))
);
CREATE INDEX execution_attempts_execution_idx ON execution_attempts (execution_id, id);

-- The history says why a finished execution went back to requested.
-- function warren_execution_event: schema/functions/060_execution_history.sql

-- A requested row that is not due yet waits for its retry's time.
-- function warren_wait_reason: schema/functions/040_wait_reason.sql
