-- warren schema 017: retired workers (docs/retries.md, "Retired workers"). A worker offline (no
-- fresh heartbeat) longer than worker.retire_after_s is retired by the executor: what is left in
-- its queue is taken back (unpinned executions are retried, pinned ones fail), the queue is
-- deleted, and the row says 'retired' with the time. A worker that comes back heartbeats online
-- again like a new one.
ALTER TABLE workers DROP CONSTRAINT workers_status_check;
ALTER TABLE workers ADD CONSTRAINT workers_status_check
    CHECK (status IN ('online', 'stopping', 'offline', 'retired'));
ALTER TABLE workers ADD COLUMN retired_at timestamptz;
