-- warren definitions: dashboards and the investigation queue (schema 020, 031).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Dashboards: records by reason and resolution.
CREATE OR REPLACE VIEW dead_letter_counts AS
    SELECT investigation_reason AS reason, resolution, count(*) AS count,
           min(received_at) AS oldest, max(received_at) AS newest
    FROM dead_letters GROUP BY investigation_reason, resolution;

-- How urgent an open record is at as_of: the reason's weight x (1 + ln(1 + age in minutes)),
-- rounded to 3 places: a poison message outranks an expiry of the same age, and a record climbs
-- as it waits. GET /api/v1/dead-letters/investigation-queue pages by it at one as_of, so that
-- the order of a walk through the pages does not shift while records age. In float8: ln() of a
-- numeric costs some 15 us, a second and a half for the ranking of 100,000 open records.
CREATE OR REPLACE FUNCTION warren_dl_priority(investigation_reason text, received_at timestamptz,
                                              as_of timestamptz) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT round((warren_dl_reason_weight(investigation_reason)
                  * (1 + ln(1 + greatest(extract(epoch FROM as_of - received_at)::float8, 0)
                                / 60)))::numeric, 3)
$$;

-- The investigation queue: open records, most urgent first (warren_dl_priority now).
CREATE OR REPLACE VIEW dead_letter_investigation_queue AS
    SELECT d.id, d.execution_id, d.investigation_reason AS reason, d.reason AS cause,
           d.resolution, d.queue, d.received_at,
           extract(epoch FROM now() - d.received_at) AS age_s,
           warren_dl_priority(d.investigation_reason, d.received_at, now()) AS priority
    FROM dead_letters d
    WHERE d.resolution IN ('pending', 'investigating') AND d.investigation_reason IS NOT NULL
    ORDER BY priority DESC, d.id;
