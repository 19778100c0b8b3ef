-- Load N synthetic dead letters (default 300,000) for timing the dead-letter statements
-- (docs/schema.md, "Dead-letter stats and search"). psql -v n=300000 -f bench/dlq_load.sql on a
-- scratch database: the rows go through the table's triggers like any writer's, in batches of
-- 5,000 (one transaction each: the pending-per-execution advisory locks last a transaction).
-- The mix: detailed reasons weighted as a busy system writes them (expiries first), 40 worker
-- queues, 12 actions, 90 days of received_at, and the older a record the likelier it is closed.
\if :{?n}
\else
\set n 300000
\endif
SELECT setseed(0.42);
SELECT set_config('bench.n', :'n', false);
-- Execution ids far above any real one (the records must not meet the executions of tests).
SELECT set_config('bench.base', (SELECT (1000000000000 + coalesce(max(id), 0))::text
                                   FROM dead_letters), false);

DO $$
DECLARE
    total int := current_setting('bench.n')::int;
    base bigint := current_setting('bench.base')::bigint;
    reasons text[] := ARRAY['expired', 'expired', 'expired', 'expired', 'expired', 'expired',
        'scheduled_timeout', 'scheduled_timeout', 'running_timeout', 'worker_stale',
        'worker_restarted', 'max_retries_exceeded', 'max_retries_exceeded', 'parse_error',
        'unprocessable_result', 'staleness_timeout', 'execution_terminal', 'execution_terminal',
        'stale_attempt', 'stale_attempt_result'];
    actions text[] := ARRAY['core.http', 'core.shell', 'billing.invoice', 'billing.refund',
        'mail.send', 'mail.digest', 'reports.nightly', 'reports.export', 'search.reindex',
        'images.resize', 'orders.sync', 'crm.push'];
    errors text[] := ARRAY['dispatch expired in its worker queue after 30000 ms',
        'not started within executor.scheduled_timeout_s (120 s)',
        'running past its timeout of 60 s plus the grace of 30 s',
        'worker went silent: no heartbeat for 45 s',
        'handler exited with code 2: connection refused by db-3.internal:5432',
        'JSON parse error at offset 17: unexpected token',
        'retry policy used up after 5 attempts: upstream returned HTTP 503',
        'completion could not be applied: result is not UTF-8',
        'stale: running for 3600 s, past its staleness threshold of 1800 s'];
    notes text[] := ARRAY['upstream outage, replayed', 'duplicate of an earlier incident',
        'customer cancelled the order', 'fixed in the handler, redriven', 'known flaky host'];
    b int;
BEGIN
    FOR b IN 0 .. (total - 1) / 5000 LOOP
        INSERT INTO dead_letters (dedup_key, execution_id, reason, routing_key, exchange, queue,
                                  message_id, message_type, headers, body, body_text, error,
                                  snapshot, resolution, resolved_at, resolved_by, notes,
                                  received_at, emitted_at)
        SELECT 'bench/' || g.exec, g.exec, g.reason, 'execution.dispatch.worker.w' || g.w,
               'attune.dlx', 'worker.w' || g.w || '.executions', md5(g.i::text),
               'ExecutionDispatch',
               jsonb_build_object('x-death', jsonb_build_array(jsonb_build_object(
                   'queue', 'worker.w' || g.w || '.executions', 'reason', 'expired',
                   'count', 1, 'time', extract(epoch FROM g.at)::bigint))),
               convert_to(g.body, 'UTF8'), g.body, errors[1 + g.i % array_length(errors, 1)],
               jsonb_build_object('id', g.exec, 'action_ref', g.action, 'status', 'scheduled'),
               g.res, CASE WHEN g.res IN ('pending', 'investigating') THEN NULL
                           ELSE g.at + make_interval(secs => 60 + g.r2 * 86400 * 3) END,
               CASE WHEN g.res IN ('pending', 'investigating') THEN NULL
                    ELSE 'ops-' || (g.i % 7) END,
               CASE WHEN g.res IN ('manually_resolved', 'permanent_failure')
                    THEN notes[1 + g.i % array_length(notes, 1)] || ' (OPS-' || (g.i % 9973) || ')'
               END,
               g.at, g.at
          FROM (SELECT s.i, s.w, s.reason, s.action, s.at, s.r2, base + s.i AS exec,
                       format('{"type":"ExecutionDispatch","message_id":"%s","payload":'
                              '{"execution_id":%s,"action_ref":"%s","attempt":%s,"params":'
                              '{"url":"https://api%s.example.com/v1/orders/%s","method":"POST",'
                              '"customer":"cust-%s"},"timeout_s":60}}',
                              md5(s.i::text), base + s.i, s.action, 1 + s.i % 3, s.w % 5,
                              s.i * 7 % 1000003, s.i % 20011) AS body,
                       CASE
                           WHEN warren_dl_investigation_reason(s.reason) IS NULL THEN 'pending'
                           WHEN s.r1 < 0.04 + 0.5 * s.fresh THEN 'pending'
                           WHEN s.r1 < 0.07 + 0.6 * s.fresh THEN 'investigating'
                           WHEN s.r1 < 0.55 THEN 'manually_resolved'
                           WHEN s.r1 < 0.80 THEN 'permanent_failure'
                           ELSE 'cancelled'
                       END AS res
                  FROM (SELECT i, 1 + (random() * 39)::int AS w,
                               reasons[1 + (random() * (array_length(reasons, 1) - 1))::int]
                                   AS reason,
                               actions[1 + (random() * (array_length(actions, 1) - 1))::int]
                                   AS action,
                               now() - make_interval(secs => (total - i) * 86400.0 * 90 / total)
                                   AS at,
                               random() AS r1, random() AS r2,
                               CASE WHEN i > total - total / 30 THEN 1 ELSE 0 END AS fresh
                          FROM generate_series(b * 5000 + 1, least((b + 1) * 5000, total)) i) s
               ) g;
        COMMIT;
    END LOOP;
END
$$;
ANALYZE dead_letters;
