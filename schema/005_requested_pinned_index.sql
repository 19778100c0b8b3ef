-- warren schema 005: pinned requested executions get their own index. The scheduler claims
-- them separately from unpinned ones (it claims unpinned work only up to the live workers'
-- spare capacity), so a large unpinned backlog is never scanned to find the pinned rows.
CREATE INDEX executions_requested_pinned_idx ON executions (created_at, id)
    WHERE status = 'requested' AND pinned_worker IS NOT NULL;

-- Why a requested execution has not gone out yet, for `warren get`, derived from the live
-- workers now: a stored capacity or worker reason can be long out of date, because the
-- scheduler no longer claims rows only to mark them waiting. Only the scheduler's note about
-- an unconfirmed dispatch, which nothing else can know, is shown as stored.
CREATE FUNCTION warren_wait_reason(e executions, stale_factor integer) RETURNS text
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
              WHERE w.status = 'online' AND e.action_ref = ANY (w.capabilities)
                AND w.last_heartbeat > now() - make_interval(secs => stale_factor * w.heartbeat_interval_s))
    END
$$;
