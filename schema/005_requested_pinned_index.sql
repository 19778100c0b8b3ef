-- warren schema 005: pinned requested executions get their own index. The scheduler claims
-- them separately from unpinned ones (it claims unpinned work only up to the live workers'
-- spare capacity), so a large unpinned backlog is never scanned to find the pinned rows.
CREATE INDEX executions_requested_pinned_idx ON executions (created_at, id)
    WHERE status = 'requested' AND pinned_worker IS NOT NULL;

-- function warren_wait_reason: schema/functions/040_wait_reason.sql
