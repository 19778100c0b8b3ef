-- warren schema 026: what a dead letter costs (docs/performance.md, the (c) line).
--
-- 1. Closing pending records when their execution completes (025) becomes a row trigger with a
--    WHEN condition. 025's statement trigger kept a transition table of every UPDATE of
--    executions and joined it with dead_letters, whose plan could not use the pending index for
--    a table without statistics: every UPDATE of executions scanned dead_letters (2.5 ms a
--    statement with 5,000 records, growing with the table). Now only an update that makes a row
--    completed queues an event, and its probe is one lookup in dead_letters_one_pending_idx.
--    The statement trigger goes here (IF EXISTS: a database built from scratch never had it);
--    the row trigger and its function are defined in schema/functions/.
DROP TRIGGER IF EXISTS executions_close_dead_letters ON executions;
DROP FUNCTION IF EXISTS warren_dl_close_completed();

-- function warren_dl_close_completed: schema/functions/160_dead_letter_close_completed.sql
-- trigger executions_close_dead_letters: schema/functions/160_dead_letter_close_completed.sql

-- 2. The snapshot (020) in PL/pgSQL: the same document, with its statements' plans kept for the
--    session instead of a SQL function planned again for every record, and the execution's
--    history read once (the attempts are folded from it).
-- function warren_dl_snapshot: schema/functions/110_dead_letter_investigation.sql
