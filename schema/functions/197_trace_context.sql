-- warren definitions: an execution's trace context (schema 038). The current definition;
-- `warren migrate` re-applies this file (docs/schema.md).

-- The traceparent given on submit, or one derived from the execution's id: version 00, a
-- trace id and a parent id from md5 (never all zeros in practice, as W3C requires), sampled.
CREATE OR REPLACE FUNCTION warren_traceparent(id bigint, given text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(given, '00-' || md5('warren-trace-' || id) || '-'
                           || left(md5('warren-span-' || id), 16) || '-01')
$$;
