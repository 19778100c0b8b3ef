-- warren definitions: one definition of a fresh and a live worker (schema 007, 016).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

CREATE OR REPLACE FUNCTION warren_worker_fresh(w workers, stale_factor integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT greatest(w.last_heartbeat, (SELECT s.heard_since FROM executor_state s))
           > now() - make_interval(secs => stale_factor * w.heartbeat_interval_s)
$$;

-- Live: may be given work. A worker that said "stopping" or "offline" is not, however fresh.
CREATE OR REPLACE FUNCTION warren_worker_live(w workers, stale_factor integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT w.status = 'online' AND warren_worker_fresh(w, stale_factor)
           AND (w.suspect_since IS NULL OR w.last_heartbeat > w.suspect_since)
$$;
