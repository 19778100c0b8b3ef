-- warren schema 009: worker incarnations and the timeout a worker applies (see docs/executor.md,
-- docs/worker.md). A worker restarted under the same name (a StatefulSet pod OOM-killed and back
-- within seconds) heartbeats online at once, so heartbeats alone never show that the process
-- running its executions is gone. Every worker process has an incarnation (32 hex digits, new at
-- each start) in its heartbeats and reports: the executor abandons the running rows of an older
-- incarnation as soon as a newer one heartbeats.
ALTER TABLE workers ADD COLUMN incarnation text;          -- the newest process seen (by started_at)
ALTER TABLE executions ADD COLUMN incarnation text;       -- the process that reported it running
-- The worker's clock when that report was sent (its envelope timestamp): a report sent before
-- the worker's current process started comes from an older one.
ALTER TABLE executions ADD COLUMN reported_at timestamptz;
-- The handler timeout the worker applies (its running report says: the submission's, else the
-- per-action default, else the worker's default). With the grace, the monitor's backstop for
-- a running row nobody reports on.
ALTER TABLE executions ADD COLUMN effective_timeout_s integer
    CONSTRAINT executions_effective_timeout_check CHECK (effective_timeout_s > 0);
