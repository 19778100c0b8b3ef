/* The end of an attempt: its record, the retry decision and what follows (attempts.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "executor/attempts.h"
#include "executor/pgtext.h"
#include "warren/db.h"
#include "warren/exec_status.h"
#include "warren/handler.h"
#include "warren/log.h"

/* EX_TEMPFAIL of sysexits.h, and what an in-process handler returns for the same */
#define EX_TEMPFAIL_CODE WARREN_HANDLER_TEMPFAIL

static const warren_config_t *config;

void attempts_set_config(const warren_config_t *cfg)
{
    config = cfg;
}

double attempts_random(void *ctx)
{
    (void)ctx;
    static uint64_t state;
    if (state == 0 && (getrandom(&state, sizeof state, 0) != (ssize_t)sizeof state || !state))
        state = 0x9e3779b97f4a7c15ull ^ (uint64_t)now_wall_ms();
    /* xorshift64*: plenty for spreading retries, never for secrets */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (double)((state * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

attempt_outcome_t attempts_outcome_of(const char *status, bool has_exit_code, int exit_code)
{
    if (!strcmp(status, EXEC_NAME_COMPLETED))
        return OUTCOME_COMPLETED;
    if (!strcmp(status, EXEC_NAME_CANCELLED))
        return OUTCOME_CANCELLED;
    if (!strcmp(status, EXEC_NAME_TIMEOUT))
        return OUTCOME_TIMEOUT;
    return has_exit_code && exit_code == EX_TEMPFAIL_CODE ? OUTCOME_TEMPFAIL : OUTCOME_FAILED;
}

/* clang-format off */
/* 1. Record every attempt still on that attempt and status; read what the decision needs. */
static const char record_sql[] =
    "WITH u AS (SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[],"
    "   $6::int[], $7::text[], $8::bool[]) WITH ORDINALITY AS u(id, attempt, status, outcome,"
    "   error, exit_code, x_death, force, ord)),"
    " ins AS (INSERT INTO execution_attempts (execution_id, attempt, kind, worker, incarnation,"
    "   scheduled_at, started_at, ended_at, status, outcome, error, exit_code, x_death)"
    "   SELECT e.id, e.attempt, e.attempt_kind, e.worker, e.incarnation, e.scheduled_at,"
    "   e.started_at, coalesce(e.ended_at, now()), e.status, u.outcome, coalesce(u.error, e.error),"
    "   u.exit_code, u.x_death::jsonb"
    "   FROM u JOIN executions e ON e.id = u.id AND e.attempt = u.attempt AND e.status = u.status"
    /* a completion that is the execution's only attempt is implied (execution_attempt_history,
     * schema 029): nothing to decide, nothing written */
    "   WHERE NOT (u.outcome = 'completed'"
    "     AND NOT EXISTS (SELECT 1 FROM execution_attempts p WHERE p.execution_id = e.id))"
    "   ORDER BY u.ord RETURNING id, execution_id, outcome, error)"
    " SELECT ins.id, e.id, e.attempt, e.status, ins.outcome, coalesce(ins.error, ''), e.action_ref,"
    " e.retries, coalesce(e.retry_max_attempts, 0), coalesce(e.retry_on, ''),"
    " (e.pinned_worker IS NOT NULL)::int, coalesce(e.fallback, ''),"
    " (SELECT bool_or(u.force) FROM u WHERE u.id = ins.execution_id)::int,"
    " (e.started_at IS NULL)::int, e.redispatches"
    " FROM ins JOIN executions e ON e.id = ins.execution_id ORDER BY ins.id";

/* 2. What the decisions say: the attempt records get them (the dead letter's copy of the last
 * one too: it reads the table as it was before this statement); retried and redispatched rows go
 * back to requested (a worker_lost one unpinned when its submission allowed any worker; a
 * redispatch counts in redispatches, not in retries); exhausted ones get a
 * max_retries_exceeded dead letter whose body holds the execution and every attempt; the
 * workers that lost a dispatch are suspect until they heartbeat again. */
static const char decide_sql[] =
    "WITH d AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[],"
    "   $6::bigint[], $7::bool[]) AS d(aid, id, attempt, status, decision, delay_ms, unpin)),"
    " att AS (UPDATE execution_attempts a SET decision = d.decision, delay_ms = d.delay_ms,"
    "   next_due_at = now() + make_interval(secs => d.delay_ms / 1000.0)"
    "   FROM d WHERE a.id = d.aid RETURNING a.id),"
    " retried AS (UPDATE executions e SET status = " EXEC_SQL(REQUESTED) ","
    "   due_at = now() + make_interval(secs => d.delay_ms / 1000.0),"
    "   retries = e.retries + (d.decision = 'retry')::int,"
    "   redispatches = e.redispatches + (d.decision = 'redispatch')::int,"
    "   attempt_kind = CASE WHEN d.decision = 'retry' THEN 'retry' ELSE e.attempt_kind END,"
    "   pinned_worker = CASE WHEN d.unpin THEN NULL ELSE e.pinned_worker END,"
    "   error = NULL, result = NULL, outcome = NULL, started_at = NULL, ended_at = NULL,"
    "   incarnation = NULL, reported_at = NULL, effective_timeout_s = NULL,"
    "   dispatch_confirmed_at = NULL, wait_reason = NULL"
    "   FROM d WHERE d.decision IN ('retry', 'redispatch') AND e.id = d.id"
    "   AND e.attempt = d.attempt"
    "   AND e.status = d.status RETURNING e.id),"
    " dl AS (INSERT INTO dead_letters (dedup_key, execution_id, reason, headers, body, body_text,"
    "   error, snapshot)"
    "   SELECT 'execution:' || e.id || ':' || e.attempt || '/max_retries_exceeded', e.id,"
    "   'max_retries_exceeded', '{}', convert_to(x.doc::text, 'UTF8'), x.doc::text,"
    "   'attempts exhausted: ' || x.n || ' attempt(s), the last ' || e.status"
    "   || coalesce(': ' || e.error, ''), x.doc"
    "   FROM d JOIN executions e ON e.id = d.id AND e.attempt = d.attempt AND e.status = d.status"
    "   CROSS JOIN LATERAL (SELECT count(*) AS n, jsonb_build_object('execution', to_jsonb(e),"
    "     'attempts', coalesce(jsonb_agg((to_jsonb(a) - 'execution_id') || CASE WHEN a.id = d.aid"
    "       THEN jsonb_build_object('decision', d.decision) ELSE '{}' END ORDER BY a.id), '[]'))"
    "     AS doc FROM execution_attempts a WHERE a.execution_id = e.id) x"
    "   WHERE d.decision = 'exhausted'"
    "   ON CONFLICT (dedup_key) DO NOTHING RETURNING execution_id)"
    " SELECT (SELECT count(*) FROM retried), (SELECT count(*) FROM dl), (SELECT count(*) FROM att)";

/* The workers whose queue lost a dispatch: no new work until a newer heartbeat (schema 016). */
static const char suspect_sql[] =
    "UPDATE workers SET suspect_since = now() WHERE id = ANY($1::text[])";
/* clang-format on */

/* The policy of one recorded row: the action's, with the submission's overrides. */
static void row_policy(PGresult *res, int r, retry_policy_t *p)
{
    retry_policy_of(config, PQgetvalue(res, r, 6), p);
    int max = atoi(PQgetvalue(res, r, 8));
    if (max > 0)
        p->max_attempts = max;
    const char *on = PQgetvalue(res, r, 9);
    char why[128];
    unsigned bits;
    if (*on && retry_on_parse(on, &bits, why, sizeof why) == 0)
        p->retry_on = bits;
}

static attempt_outcome_t outcome_word(const char *w)
{
    for (int o = 0; o < OUTCOME_COUNT; o++)
        if (!strcmp(w, retry_outcome_name((attempt_outcome_t)o)))
            return (attempt_outcome_t)o;
    return OUTCOME_FAILED;
}

/* Decide each recorded attempt; fills the arrays of decide_sql. */
static void decide_rows(PGresult *res, pgarr_t *a)
{
    for (int r = 0; r < PQntuples(res); r++) {
        retry_policy_t p;
        row_policy(res, r, &p);
        attempt_outcome_t o = outcome_word(PQgetvalue(res, r, 4));
        char type[64];
        retry_error_type(PQgetvalue(res, r, 5), type, sizeof type);
        retry_decision_t d = retry_decide(&p, atoi(PQgetvalue(res, r, 7)) + 1, o, type,
                                          attempts_random, NULL);
        const char *word = retry_verdict_name(d.verdict);
        bool pinned = atoi(PQgetvalue(res, r, 10)) == 1;
        bool any = !strcmp(PQgetvalue(res, r, 11), "any");
        bool unpin = false;
        if (atoi(PQgetvalue(res, r, 12)) == 1 && !pinned) { /* a retired worker's queue */
            d.verdict = RETRY_AGAIN;
            d.delay_ms = 0;
            word = retry_verdict_name(d.verdict);
        }
        /* Never started (no running report) and its worker lost: dispatched again at once,
         * outside the policy, up to executor.max_redispatches times; a pinned one only with
         * --fallback any (docs/retries.md, "Redispatch"). */
        bool never_started = atoi(PQgetvalue(res, r, 13)) == 1;
        if (o == OUTCOME_WORKER_LOST && never_started && (!pinned || any) &&
            atoi(PQgetvalue(res, r, 14)) < config->executor.max_redispatches) {
            d.verdict = RETRY_AGAIN;
            d.delay_ms = 0;
            word = "redispatch";
        }
        if (o == OUTCOME_WORKER_LOST && pinned && d.verdict == RETRY_AGAIN) {
            if (any)
                unpin = true; /* --fallback any: another worker may run it */
            else
                word = "pinned"; /* its worker is gone: as before, it fails */
        }
        pgarr_add(&a[0], PQgetvalue(res, r, 0));
        pgarr_add(&a[1], PQgetvalue(res, r, 1));
        pgarr_add(&a[2], PQgetvalue(res, r, 2));
        pgarr_add(&a[3], PQgetvalue(res, r, 3));
        pgarr_add(&a[4], word);
        pgarr_add_int_or_null(&a[5], !strcmp(word, "retry") || !strcmp(word, "redispatch"),
                              d.delay_ms);
        pgarr_add(&a[6], unpin ? "true" : "false");
    }
}

static int mark_suspects(PGconn *db, const attempt_end_t *ends, size_t n, char *err, size_t errlen)
{
    pgarr_t w;
    pgarr_init(&w);
    for (size_t i = 0; i < n; i++)
        if (ends[i].lost_worker && *ends[i].lost_worker)
            pgarr_add(&w, ends[i].lost_worker);
    int rc = 0;
    if (w.n > 0) {
        const char *params[] = {pgarr_text(&w)};
        PGresult *res = NULL;
        rc = params[0] ? db_exec(db, suspect_sql, 1, params, &res, err, errlen) : -1;
        if (!params[0])
            snprintf(err, errlen, "out of memory");
        PQclear(res);
    }
    pgarr_free(&w);
    return rc;
}

int attempts_end(PGconn *db, const attempt_end_t *ends, size_t n, executor_stats_t *counts,
                 char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    if (!config) {
        snprintf(err, errlen, "attempts: no configuration");
        return -1;
    }
    enum { NREC = 8, NDEC = 7 };
    pgarr_t a[NREC], d[NDEC];
    for (int i = 0; i < NREC; i++)
        pgarr_init(&a[i]);
    for (int i = 0; i < NDEC; i++)
        pgarr_init(&d[i]);
    for (size_t i = 0; i < n; i++) {
        const attempt_end_t *e = &ends[i];
        pgarr_add_int(&a[0], e->id);
        pgarr_add_int(&a[1], e->attempt);
        pgarr_add(&a[2], e->status);
        pgarr_add(&a[3], retry_outcome_name(e->outcome));
        pgarr_add(&a[4], e->error);
        pgarr_add_int_or_null(&a[5], e->has_exit_code, e->exit_code);
        pgarr_add(&a[6], e->x_death);
        pgarr_add(&a[7], e->force_retry ? "true" : "false");
    }
    const char *params[NREC];
    int rc = 0;
    for (int i = 0; i < NREC; i++)
        if (!(params[i] = pgarr_text(&a[i])))
            rc = -1;
    PGresult *rec = NULL, *res = NULL;
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    else
        rc = db_exec(db, record_sql, NREC, params, &rec, err, errlen);
    if (rc == 0 && PQntuples(rec) > 0) {
        decide_rows(rec, d);
        for (int i = 0; i < NDEC && rc == 0; i++)
            if (!(params[i] = pgarr_text(&d[i]))) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
            }
        if (rc == 0)
            rc = db_exec(db, decide_sql, NDEC, params, &res, err, errlen);
        if (rc == 0 && PQntuples(res) == 1) {
            counts->retries_scheduled += strtoull(PQgetvalue(res, 0, 0), NULL, 10);
            uint64_t exhausted = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
            counts->retries_exhausted += exhausted;
            if (exhausted)
                stats_dead_letter(counts, "max_retries_exceeded", exhausted);
        }
    }
    if (rc == 0)
        rc = mark_suspects(db, ends, n, err, errlen);
    PQclear(rec);
    PQclear(res);
    for (int i = 0; i < NREC; i++)
        pgarr_free(&a[i]);
    for (int i = 0; i < NDEC; i++)
        pgarr_free(&d[i]);
    return rc;
}
