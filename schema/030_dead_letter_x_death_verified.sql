-- warren schema 030: a record's queue and reason from an x-death header are a claim until the
-- broker is known to have written it (docs/dead-letters.md, "Where a record comes from"). The
-- executor sets x_death_verified when it records a dead letter that has an x-death: true when
-- the message came the broker's way (a dispatch of the executor's, dead-lettered from a worker
-- queue through the dead-letter exchange), false for a header anyone could have written (for
-- instance published straight into the dead-letter queue). NULL: no x-death, or a record of
-- before this migration.
ALTER TABLE dead_letters ADD COLUMN x_death_verified boolean;

-- The list item (API and `warren dlq`) shows it beside queue and reason.
-- function warren_dl_item: schema/functions/130_dead_letter_documents.sql
