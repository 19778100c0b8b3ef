-- warren schema 003: why a requested execution is still waiting (see docs/executor.md).
-- The scheduler sets it when it cannot place an execution ("no live worker offers action 'x'",
-- "all 2 live workers offering 'x' are at capacity") and clears it when it dispatches one,
-- in the same statement, so `warren get` / `warren list` can say why nothing happens.
ALTER TABLE executions ADD COLUMN wait_reason text;
