-- warren schema 032: idempotency keys of submissions (docs/api.md, "Idempotent submission").
-- One row per key a client gave with a submission: the execution it names, a hash of the
-- request it came with (md5 of the submission's JSON as jsonb prints it, without the key, so
-- the order of members and white space do not matter) and when the key is free again
-- (api.idempotency_window_s after it was taken). The primary key is what makes a key name one
-- execution whichever executor or CLI submits it: the submitting statement inserts here with
-- ON CONFLICT and takes over a row only once it has expired. Submissions without a key never
-- touch this table.
CREATE TABLE execution_idempotency_keys (
    idempotency_key text        PRIMARY KEY,
    -- Deferred: the key row is written in the same statement as the execution it names, and a
    -- submission refused for a conflicting key is rolled back before the check would run.
    execution_id    bigint      NOT NULL
        REFERENCES executions (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    request_hash    text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    CONSTRAINT execution_idempotency_keys_key_check
        CHECK (idempotency_key ~ '^[!-~]{1,255}$')
);

-- The cascade from a pruned execution, and retention's rounds over expired keys.
CREATE INDEX execution_idempotency_keys_execution_idx
    ON execution_idempotency_keys (execution_id);
CREATE INDEX execution_idempotency_keys_expires_idx
    ON execution_idempotency_keys (expires_at);
