-- warren schema 036: answers that wait for an execution to end (GET /api/v1/executions/{id}
-- ?wait_s=N, `warren submit --wait`; docs/api.md). A client that waits registers the execution
-- here until a time; while any registration is current, every statement that changes an
-- execution's status notifies channel warren_ended once (at COMMIT), and each waiting executor
-- or CLI looks at its executions again. Nobody waits, nothing is announced: the hot path pays
-- one index probe per statement. UNLOGGED: registrations live seconds, cost no WAL and need
-- not survive a crash (a listener that reconnects looks again at once).
CREATE UNLOGGED TABLE execution_waiters (
    execution_id bigint NOT NULL,
    until timestamptz NOT NULL
);
CREATE INDEX execution_waiters_until_idx ON execution_waiters (until);

-- function warren_notify_ended: schema/functions/195_execution_waiters.sql
-- trigger executions_notify_ended: schema/functions/195_execution_waiters.sql
