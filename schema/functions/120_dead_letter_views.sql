-- warren definitions: dashboards and the investigation queue (schema 020).
-- The current definition; `warren migrate` re-applies this file (docs/schema.md).

-- Dashboards: records by reason and resolution.
CREATE OR REPLACE VIEW dead_letter_counts AS
    SELECT investigation_reason AS reason, resolution, count(*) AS count,
           min(received_at) AS oldest, max(received_at) AS newest
    FROM dead_letters GROUP BY investigation_reason, resolution;

-- The investigation queue: open records, most urgent first. priority = the reason's weight x
-- (1 + ln(1 + age in minutes)): a poison message outranks an expiry of the same age, and a
-- record climbs as it waits.
CREATE OR REPLACE VIEW dead_letter_investigation_queue AS
    SELECT d.id, d.execution_id, d.investigation_reason AS reason, d.reason AS cause,
           d.resolution, d.queue, d.received_at,
           extract(epoch FROM now() - d.received_at) AS age_s,
           round((warren_dl_reason_weight(d.investigation_reason)
                  * (1 + ln(1 + extract(epoch FROM now() - d.received_at) / 60)))::numeric, 3)
               AS priority
    FROM dead_letters d
    WHERE d.resolution IN ('pending', 'investigating') AND d.investigation_reason IS NOT NULL
    ORDER BY priority DESC, d.id;
