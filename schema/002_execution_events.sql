-- warren schema 002: execution history, one row per status change (see docs/schema.md).
-- Written by a trigger so no code path can change a status without leaving a trace.

CREATE TABLE execution_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id bigint      NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    at           timestamptz NOT NULL DEFAULT now(),
    from_status  text,                  -- NULL for the insert that created the execution
    to_status    text        NOT NULL,
    worker       text,
    attempt      integer     NOT NULL,
    error        text
);

-- `warren get N` shows the history of one execution in order.
CREATE INDEX execution_events_execution_idx ON execution_events (execution_id, id);

-- function warren_execution_event: schema/functions/060_execution_history.sql
-- trigger executions_event: schema/functions/060_execution_history.sql
