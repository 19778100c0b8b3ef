-- warren schema 007: one definition of "this worker's heartbeat is fresh", used by the
-- scheduler, the timeout monitor, `warren workers` and warren_wait_reason alike, and measured
-- from when the executor could hear heartbeats again (see docs/executor.md).
--
-- An executor that cannot hear heartbeats (its broker connection is down, its database refused
-- the batch) must not count that time against the workers: when its heartbeat consumer hears
-- again, it sets executor_state.heard_since = now(), and a heartbeat is fresh while it is
-- younger than heartbeat_stale_factor x the worker's interval counted from the later of
-- last_heartbeat and heard_since. One row; every executor writes it.
CREATE TABLE executor_state (
    id          boolean     PRIMARY KEY DEFAULT true CHECK (id),
    heard_since timestamptz
);
INSERT INTO executor_state (id) VALUES (true);

-- function warren_worker_fresh: schema/functions/030_worker_liveness.sql
-- function warren_worker_live: schema/functions/030_worker_liveness.sql
-- function warren_wait_reason: schema/functions/040_wait_reason.sql
