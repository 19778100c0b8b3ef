-- warren schema 039: a dispatch that no worker started is dispatched again by default
-- (docs/retries.md, "Redispatch"): its worker was lost or retired, or it expired unconsumed in
-- the worker's queue. Such a move does not count against the retry policy (retries), only here,
-- bounded by executor.max_redispatches; the attempt record's decision says `redispatch` and the
-- history's note says why. ADD COLUMN with a constant default rewrites nothing.
ALTER TABLE executions ADD COLUMN redispatches integer NOT NULL DEFAULT 0;
