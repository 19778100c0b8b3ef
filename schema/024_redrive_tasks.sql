-- warren schema 024: bulk redrive tasks (docs/dead-letters.md, "Bulk redrive"), after SQS's
-- message-move tasks. A task redrives the open records matching its filter (the list filter)
-- that existed when it started (id <= max_id), oldest first, at `rate` records per second from
-- a token bucket whose state is bucket_at (see below). Its state lives here, so a task survives
-- the executor: whichever executor runs next carries on from last_id, and each batch commits
-- its redrives together with the task's counts.
CREATE TABLE redrive_tasks (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    filter         jsonb       NOT NULL,
    -- What the task drains: the filter's queue, '*' for every queue. At most one active task
    -- per source (the index below).
    source         text        NOT NULL,
    rate           integer     NOT NULL,
    worker         text,                  -- pin every new attempt there
    unpin          boolean     NOT NULL DEFAULT false,
    status         text        NOT NULL DEFAULT 'running',
    to_move        integer     NOT NULL,  -- open records matching at the start
    moved          integer     NOT NULL DEFAULT 0,
    skipped        integer     NOT NULL DEFAULT 0, -- refused: execution moved on, record closed
    max_id         bigint      NOT NULL,  -- records after the start are not the task's
    last_id        bigint      NOT NULL DEFAULT 0, -- progress: records up to it are done
    -- The token bucket: tokens = (now() - bucket_at) x rate, at most the burst; taking k
    -- tokens moves bucket_at k / rate on.
    bucket_at      timestamptz NOT NULL DEFAULT now(),
    failure_reason text,
    created_by     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz,

    CONSTRAINT redrive_tasks_status_check CHECK (status IN (
        'running', 'completed', 'cancelling', 'cancelled', 'failed')),
    CONSTRAINT redrive_tasks_rate_check CHECK (rate BETWEEN 1 AND 500),
    CONSTRAINT redrive_tasks_counts_check CHECK (to_move >= 0 AND moved >= 0 AND skipped >= 0),
    CONSTRAINT redrive_tasks_filter_check CHECK (jsonb_typeof(filter) = 'object')
);

CREATE UNIQUE INDEX redrive_tasks_one_active_idx ON redrive_tasks (source)
    WHERE status IN ('running', 'cancelling');

-- function warren_redrive_tasks_stamp: schema/functions/150_redrive_tasks.sql
-- trigger redrive_tasks_stamp: schema/functions/150_redrive_tasks.sql
-- function warren_dl_redrivable: schema/functions/150_redrive_tasks.sql
