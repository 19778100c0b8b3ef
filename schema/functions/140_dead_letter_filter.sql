-- warren definitions: the filter the API and `warren dlq` share (schema 021, 027).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- The record ids of a JSON array, for `id = ANY(...)` (an index scan), NULL for anything else.
CREATE OR REPLACE FUNCTION warren_dl_ids(ids jsonb) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(ids) = 'array'
                THEN ARRAY(SELECT jsonb_array_elements_text(ids)::bigint) END
$$;

-- Does record d match filter f? f is a JSON object whose absent or null members match
-- anything: resolution, reason (the investigation word), queue, action, execution_id, since and
-- until (received_at, RFC 3339), q (case-insensitive text in body, error or notes), ids (an
-- array of record ids), below (ids below this: the cursor).
CREATE OR REPLACE FUNCTION warren_dl_match(d dead_letters, f jsonb) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT (f ->> 'resolution' IS NULL OR d.resolution = f ->> 'resolution')
       AND (f ->> 'reason' IS NULL OR d.investigation_reason = f ->> 'reason')
       AND (f ->> 'queue' IS NULL OR d.queue = f ->> 'queue')
       AND (f ->> 'action' IS NULL OR d.action_ref = f ->> 'action')
       AND (f ->> 'execution_id' IS NULL OR d.execution_id = (f ->> 'execution_id')::bigint)
       AND (f ->> 'since' IS NULL OR d.received_at >= (f ->> 'since')::timestamptz)
       AND (f ->> 'until' IS NULL OR d.received_at < (f ->> 'until')::timestamptz)
       AND (f ->> 'below' IS NULL OR d.id < (f ->> 'below')::bigint)
       AND (f ->> 'q' IS NULL
            OR warren_dl_search_text(d.body_text, d.error, d.notes)
               LIKE '%' || replace(replace(replace(lower(f ->> 'q'), '\', '\\'), '%', '\%'),
                                   '_', '\_') || '%')
       AND (jsonb_typeof(f -> 'ids') IS DISTINCT FROM 'array'
            OR d.id = ANY (warren_dl_ids(f -> 'ids')))
$$;
