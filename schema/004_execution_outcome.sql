-- warren schema 004: how the handler ended, as the worker reported it with the completion:
-- {exit_code, signal, stderr_tail, truncated, duration_ms} (see docs/executor.md). Kept apart
-- from result, which is the handler's own output.
ALTER TABLE executions ADD COLUMN outcome jsonb;
