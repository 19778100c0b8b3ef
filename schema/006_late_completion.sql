-- warren schema 006: a late completion of an abandoned attempt is accepted, and its history row
-- says so (see docs/executor.md). An execution is abandoned when the executor loses sight of its
-- worker (stale heartbeats, a restarted worker, no result past its timeout), but the worker may
-- still finish it; the executor then accepts the completion of the SAME attempt (the attempt
-- fence and the transition table in src/executor/transitions.c decide), and the history keeps
-- both steps: running -> abandoned, then abandoned -> completed with the note 'late completion'.
ALTER TABLE execution_events ADD COLUMN note text;

-- function warren_execution_event: schema/functions/060_execution_history.sql
