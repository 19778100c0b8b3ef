-- warren schema 033: schedules and priorities (docs/flow-control.md).
-- A submission may say when it may run at the earliest (run_at or delay_s, stored in due_at, the
-- column retries already wait on, schema 015) and how urgent it is: priority 0 to 9, 9 the most
-- urgent, 5 when not given. The scheduler claims higher priorities first, then in due order.
ALTER TABLE executions
    ADD COLUMN priority smallint NOT NULL DEFAULT 5
        CONSTRAINT executions_priority_check CHECK (priority BETWEEN 0 AND 9);

-- The scheduler's claim in its new order, still one partial index scan that stops at the batch
-- (ORDER BY priority DESC, due_at, id; the same names as schema 015's indexes they replace).
DROP INDEX executions_due_idx;
DROP INDEX executions_due_pinned_idx;
CREATE INDEX executions_due_idx ON executions (priority DESC, due_at, id)
    WHERE status = 'requested';
CREATE INDEX executions_due_pinned_idx ON executions (priority DESC, due_at, id)
    WHERE status = 'requested' AND pinned_worker IS NOT NULL;
