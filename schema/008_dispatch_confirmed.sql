-- warren schema 008: when the broker confirmed the dispatch of the current attempt (see
-- docs/executor.md). The scheduler commits a row as scheduled before it publishes; an executor
-- that dies after COMMIT, a COMMIT whose reply was lost, a publish without an answer leave a
-- scheduled row whose dispatch may be in no queue at all. Only a confirmed one is known to be
-- in the worker's queue. NULL: not (yet) confirmed; cleared on every new dispatch.
ALTER TABLE executions ADD COLUMN dispatch_confirmed_at timestamptz;

-- The monitor returns scheduled rows whose dispatch stayed unconfirmed too long to requested.
CREATE INDEX executions_unconfirmed_idx ON executions (scheduled_at)
    WHERE status = 'scheduled' AND dispatch_confirmed_at IS NULL;
