-- warren schema 028: a flood of unusable messages folds into one open record per shape
-- (docs/dead-letters.md, "Floods"). The executor gives every record of a folding reason (a
-- message nobody can use, or a report of a dispatch it never sent) a fold_key, "queue/reason"
-- of the queue it consumed it from, and inserts it with ON CONFLICT on the open record of that
-- key: a new record keeps the first message as its sample, an open one only counts
-- (occurrences, last_seen_at). Once closed (resolved in bulk, say) a record takes no more: the
-- next message of that shape opens a new one.
ALTER TABLE dead_letters
    ADD COLUMN fold_key text,
    ADD COLUMN occurrences bigint NOT NULL DEFAULT 1,
    ADD COLUMN last_seen_at timestamptz,
    ADD CONSTRAINT dead_letters_occurrences_check CHECK (occurrences >= 1);

CREATE UNIQUE INDEX dead_letters_open_fold_idx ON dead_letters (fold_key)
    WHERE fold_key IS NOT NULL AND resolution IN ('pending', 'investigating');

-- The list item gains the count and when the last message of the shape came.
-- function warren_dl_item: schema/functions/130_dead_letter_documents.sql
