-- warren schema 016: a worker that lost a dispatch is suspect (docs/retries.md, "Redispatch on
-- worker loss"). When a dispatch expires unconsumed in a worker's queue (or a confirmed dispatch
-- is never started), the executor sets suspect_since = now(): the worker gets no new work until
-- it heartbeats again (a heartbeat recorded after suspect_since), so the retry goes to another
-- worker. One definition of "live" still: warren_worker_live, used everywhere.
ALTER TABLE workers ADD COLUMN suspect_since timestamptz;

-- function warren_worker_live: schema/functions/030_worker_liveness.sql
