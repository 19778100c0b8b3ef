-- warren schema 025: where retries (015-017) meet the dead-letter workflow (020-024).
--
-- 1. A retired worker's message (worker_retired, 017) is an execution whose worker went away:
--    worker_unavailable, not poison.
-- function warren_dl_investigation_reason: schema/functions/110_dead_letter_investigation.sql
UPDATE dead_letters SET investigation_reason = 'worker_unavailable'
    WHERE reason = 'worker_retired' AND investigation_reason IS DISTINCT FROM 'worker_unavailable';

-- 2. The snapshot's retry delays: the delay each ended attempt's policy applied, in order.
-- function warren_dl_retry_delays: schema/functions/110_dead_letter_investigation.sql

-- 3. A record that nobody has picked up yet needs nobody once its execution completes after
--    all: closed as cancelled by warren, with a note (a statement trigger here, a row trigger
--    since 026).
-- function warren_dl_close_completed: schema/functions/160_dead_letter_close_completed.sql
-- trigger executions_close_dead_letters: schema/functions/160_dead_letter_close_completed.sql
