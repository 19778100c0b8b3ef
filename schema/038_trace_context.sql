-- warren schema 038: W3C trace context end to end (docs/api.md, "Trace context"). A submission
-- may carry a traceparent (the HTTP header or the field); it is kept here as given. Without one
-- the execution's trace context is derived from its id (warren_traceparent): stable, and it
-- costs no column value on the hot path. Either way it travels in the dispatch, the handler's
-- environment (TRACEPARENT), the result, the ExecutionEnded event and the API's answers.
ALTER TABLE executions
    ADD COLUMN traceparent text
        CONSTRAINT executions_traceparent_check
        CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');

-- The outbox keeps what was given (NULL: derived from execution_id when published).
ALTER TABLE execution_ended_events ADD COLUMN traceparent text;

-- function warren_traceparent: schema/functions/197_trace_context.sql
