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

CREATE FUNCTION warren_worker_fresh(w workers, stale_factor integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT greatest(w.last_heartbeat, (SELECT s.heard_since FROM executor_state s))
           > now() - make_interval(secs => stale_factor * w.heartbeat_interval_s)
$$;

-- Live: may be given work. A worker that said "stopping" or "offline" is not, however fresh.
CREATE FUNCTION warren_worker_live(w workers, stale_factor integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT w.status = 'online' AND warren_worker_fresh(w, stale_factor)
$$;

CREATE OR REPLACE FUNCTION warren_wait_reason(e executions, stale_factor integer) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN e.status <> 'requested' THEN NULL
        WHEN e.wait_reason LIKE 'last dispatch was not confirmed%' THEN e.wait_reason
        WHEN e.pinned_worker IS NOT NULL THEN
            format('pinned to %s: goes out on the scheduler''s next tick', e.pinned_worker)
        ELSE (SELECT CASE WHEN count(*) = 0
                          THEN format('no live worker offers action %L', e.action_ref)
                          ELSE format('queued: %s live worker(s) offer %L; it goes out when one has room',
                                      count(*), e.action_ref) END
              FROM workers w
              WHERE e.action_ref = ANY (w.capabilities) AND warren_worker_live(w, stale_factor))
    END
$$;
