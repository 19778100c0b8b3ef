-- warren definitions: why a requested execution has not gone out yet (schema 005, 007, 015, 033, 035).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Why a requested execution has not gone out yet, for `warren get`, derived from the live
-- workers now: a stored capacity or worker reason can be long out of date, because the
-- scheduler no longer claims rows only to mark them waiting. Only the scheduler's note about
-- an unconfirmed dispatch, which nothing else can know, is shown as stored.
CREATE OR REPLACE FUNCTION warren_wait_reason(e executions, stale_factor integer) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN e.status <> 'requested' THEN NULL
        WHEN EXISTS (SELECT 1 FROM action_pauses p
                     WHERE p.action_ref = e.action_ref AND p.resumed_at IS NULL) THEN
            (SELECT format('paused: action %L was paused by %s at %s; it goes out when resumed',
                           p.action_ref, p.paused_by,
                           to_char(p.paused_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             FROM action_pauses p WHERE p.action_ref = e.action_ref)
        WHEN e.due_at > now() THEN
            format('%s due at %s', CASE e.attempt_kind WHEN 'manual' THEN 'manual attempt'
                                                       WHEN 'retry' THEN 'retry attempt'
                                                       ELSE 'scheduled: first attempt' END,
                   to_char(e.due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
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
