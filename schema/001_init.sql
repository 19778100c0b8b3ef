-- warren schema 001: executions, workers, dead letters (see docs/schema.md).
-- Applied by `warren migrate` inside one transaction; do not add BEGIN/COMMIT here.

-- function warren_touch_updated_at: schema/functions/010_touch_updated_at.sql

-- ---------------------------------------------------------------------------------------------
-- executions: one row per submitted action run. The id is a plain increasing number because
-- people read and type it (`warren get 42`), and it orders like created_at.
CREATE TABLE executions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action_ref    text        NOT NULL,
    params        jsonb       NOT NULL DEFAULT '{}',
    status        text        NOT NULL DEFAULT 'requested',
    worker        text,                 -- the worker it was dispatched to (last attempt)
    pinned_worker text,                 -- `warren submit --worker`: only this worker may run it
    attempt       integer     NOT NULL DEFAULT 0,  -- dispatches so far; results carry it back
    timeout_s     integer,              -- NULL: the worker's default timeout
    result        jsonb,
    error         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    scheduled_at  timestamptz,          -- when the last dispatch was committed (before publish)
    started_at    timestamptz,          -- when the worker reported it running
    ended_at      timestamptz,          -- when it reached a terminal status

    CONSTRAINT executions_status_check CHECK (status IN (
        'requested', 'scheduling', 'scheduled', 'running', 'completed', 'failed',
        'canceling', 'cancelled', 'timeout', 'abandoned')),
    CONSTRAINT executions_action_ref_check CHECK (action_ref <> '' AND length(action_ref) <= 255),
    CONSTRAINT executions_attempt_check CHECK (attempt >= 0),
    CONSTRAINT executions_timeout_check CHECK (timeout_s IS NULL OR timeout_s > 0),
    CONSTRAINT executions_pinned_worker_check
        CHECK (pinned_worker IS NULL OR pinned_worker ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    -- Terminal rows always say when they ended (the trigger below fills it in).
    CONSTRAINT executions_ended_check CHECK (
        status NOT IN ('completed', 'failed', 'cancelled', 'timeout', 'abandoned')
        OR ended_at IS NOT NULL)
);

-- Scheduler: claim the oldest requested executions (ORDER BY created_at, id ... SKIP LOCKED).
-- Partial, so it stays as small as the backlog however large the history grows.
CREATE INDEX executions_requested_idx ON executions (created_at, id) WHERE status = 'requested';
-- Timeout monitor: dispatches no worker picked up within executor.scheduled_timeout_s.
CREATE INDEX executions_scheduled_idx ON executions (scheduled_at) WHERE status = 'scheduled';
-- Per-worker in-flight work: capacity checks and abandoning the work of a stale worker.
CREATE INDEX executions_active_worker_idx ON executions (worker)
    WHERE status IN ('scheduling', 'scheduled', 'running', 'canceling');
-- `warren list --status S` newest first, and any "rows stuck in status S" sweep.
CREATE INDEX executions_status_created_idx ON executions (status, created_at);
-- `warren list` without a status filter, newest first.
CREATE INDEX executions_created_idx ON executions (created_at);

-- function warren_executions_stamp: schema/functions/020_executions_stamp.sql
-- trigger executions_stamp: schema/functions/020_executions_stamp.sql

-- ---------------------------------------------------------------------------------------------
-- workers: one row per worker id, upserted from its heartbeats. No foreign key from
-- executions: a pinned worker may not have announced itself yet, and worker rows may be pruned.
CREATE TABLE workers (
    id                   text        PRIMARY KEY,
    capabilities         text[]      NOT NULL DEFAULT '{}',  -- handler names it can run
    capacity             integer     NOT NULL,                -- max concurrent executions
    running              integer     NOT NULL DEFAULT 0,      -- in flight, as last reported
    status               text        NOT NULL DEFAULT 'online',
    last_heartbeat       timestamptz NOT NULL DEFAULT now(),
    heartbeat_interval_s integer     NOT NULL,
    started_at           timestamptz,
    host                 text,
    version              text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),

    -- Same rule as topo_worker_id_valid(): ids become queue names and routing keys.
    CONSTRAINT workers_id_check CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    CONSTRAINT workers_status_check CHECK (status IN ('online', 'stopping', 'offline')),
    CONSTRAINT workers_capacity_check CHECK (capacity > 0),
    CONSTRAINT workers_running_check CHECK (running >= 0),
    CONSTRAINT workers_heartbeat_interval_check CHECK (heartbeat_interval_s > 0)
);

-- Liveness sweep: workers not yet marked offline, oldest heartbeat first.
CREATE INDEX workers_live_idx ON workers (last_heartbeat) WHERE status <> 'offline';

-- trigger workers_touch: schema/functions/010_touch_updated_at.sql

-- ---------------------------------------------------------------------------------------------
-- dead_letters: every message that reached the dead-letter queue, kept raw for investigation.
-- execution_id has no foreign key on purpose: a dead letter may name an execution that does
-- not exist (any more), and the record must survive either way.
CREATE TABLE dead_letters (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at   timestamptz NOT NULL DEFAULT now(),
    -- Identity of this dead-lettering (message id + first x-death queue/reason/count/time):
    -- a redelivery of the same dead letter hits ON CONFLICT (dedup_key) DO NOTHING.
    dedup_key     text        NOT NULL,
    execution_id  bigint,
    reason        text        NOT NULL,
    routing_key   text,
    exchange      text,
    queue         text,                 -- source queue, from x-death
    message_id    text,
    message_type  text,
    headers       jsonb       NOT NULL DEFAULT '{}',  -- AMQP headers, x-death included
    body          bytea       NOT NULL,               -- exactly the bytes received
    body_text     text,                 -- the body when it is valid UTF-8
    error         text,                 -- what the handler found wrong, if anything
    snapshot      jsonb,                -- the execution row when the dead letter was handled
    resolution    text        NOT NULL DEFAULT 'pending',
    resolved_at   timestamptz,
    resolved_by   text,
    notes         text,
    updated_at    timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT dead_letters_dedup_key_key UNIQUE (dedup_key),
    -- Reasons are machine words so they group cleanly; docs/schema.md lists them.
    CONSTRAINT dead_letters_reason_check CHECK (reason ~ '^[a-z][a-z0-9_]{0,63}$'),
    CONSTRAINT dead_letters_resolution_check CHECK (resolution IN (
        'pending', 'investigating', 'manually_resolved', 'permanent_failure', 'cancelled')),
    CONSTRAINT dead_letters_resolved_check CHECK (
        resolution IN ('pending', 'investigating') OR resolved_at IS NOT NULL)
);

-- "What happened to execution N?"
CREATE INDEX dead_letters_execution_idx ON dead_letters (execution_id) WHERE execution_id IS NOT NULL;
-- Newest dead letters first, and retention by age.
CREATE INDEX dead_letters_received_idx ON dead_letters (received_at);
-- Listing by resolution (the investigation queue is resolution = 'pending', oldest first).
CREATE INDEX dead_letters_resolution_idx ON dead_letters (resolution, received_at);

-- function warren_dead_letters_stamp: schema/functions/100_dead_letters_stamp.sql
-- trigger dead_letters_stamp: schema/functions/100_dead_letters_stamp.sql
