/*
 * Worker results: ExecutionStatusChanged (running) and ExecutionCompleted (completed, failed,
 * timeout) from the results queue, applied per drained batch in one transaction. Every change
 * is a compare-and-swap fenced by the attempt, the worker and the transition table, so a late,
 * repeated or stale message changes nothing; it is counted as stale. Unreadable messages, and
 * reports from a worker the execution was not dispatched to, go to dead_letters in the same
 * transaction.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/attempts.h"
#include "executor/dlstore.h"
#include "executor/identity.h"
#include "executor/inmsg.h"
#include "executor/pgtext.h"
#include "executor/results.h"
#include "executor/transitions.h"
#include "warren/db.h"
#include "warren/envelope.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/signing.h"
#include "warren/timestamp.h"
#include "warren/utf8.h"

#define MAX_ERROR_TEXT 8192
#define UNAPPLIED_ERROR "The worker's completion could not be applied"

typedef struct result_msg {
    inmsg_t in; /* first: dlstore_unusable reads it */
    int64_t execution_id;
    int attempt;
    exec_status_t target;
    char worker[WORKER_ID_MAX + 1]; /* "" when unknown */
    char *result;                   /* JSON text or NULL */
    char *error_text;               /* cleaned, or NULL */
    char *outcome; /* JSON {exit_code, signal, stderr_tail, truncated, duration_ms} */
    char started_at[TS_TEXT_MAX]; /* the worker's start time, UTC microseconds; "" when absent */
    char incarnation[INCARNATION_LEN + 1]; /* the worker process's; "" when absent or malformed */
    char reported_at[TS_TEXT_MAX];         /* running: the envelope's timestamp, UTC */
    int64_t timeout_s;                     /* running: the timeout the worker applies; 0: unknown */
    int64_t exit_code;                     /* completion: the handler's exit code, with ... */
    bool has_exit_code;                    /* ... this (75 is a temporary failure) */
    int round;                             /* nth message for its execution in this batch */
    bool applied;
    bool completion;    /* an ExecutionCompleted, also when read from a cleaned copy */
    bool unprocessable; /* a completion of a known execution and attempt that cannot be
                         * applied: it fails that attempt (reason unprocessable_result) */
    bool older_attempt; /* not applied: the execution is on a later attempt already */
    bool wrong_worker;  /* not applied: the execution's attempt belongs to another worker */
    bool foreign;       /* not applied: no such execution, or an attempt never dispatched */
} result_msg_t;

/* The worker: payload.worker_id, else the last word of execution.{status,completed}.{worker}. */
static void parse_worker(result_msg_t *m)
{
    const char *w = NULL;
    char err[ERRBUF_SIZE];
    jf_t p = {m->in.env.payload, "payload", err, sizeof err};
    if (jf_string(&p, "worker_id", false, WORKER_ID_MAX, &w) == 1 && ids_worker_valid(w)) {
        snprintf(m->worker, sizeof m->worker, "%s", w);
        return;
    }
    const char *key = m->in.d->routing_key ? m->in.d->routing_key : "";
    const char *prefixes[] = {"execution.status.", "execution.completed."};
    for (size_t i = 0; i < 2; i++)
        if (!strncmp(key, prefixes[i], strlen(prefixes[i])) &&
            ids_worker_valid(key + strlen(prefixes[i])))
            snprintf(m->worker, sizeof m->worker, "%s", key + strlen(prefixes[i]));
}

/* The worker process's incarnation, when it sends a well-formed one (older workers send none;
 * anything else is left out rather than refusing the report). */
static void parse_process(result_msg_t *m)
{
    const char *inc = NULL;
    char err[ERRBUF_SIZE];
    jf_t p = {m->in.env.payload, "payload", err, sizeof err};
    if (jf_string(&p, "incarnation", false, INCARNATION_LEN, &inc) == 1 &&
        ids_incarnation_valid(inc))
        snprintf(m->incarnation, sizeof m->incarnation, "%s", inc);
}

/* A running report: when the worker sent it (its clock), and the timeout it applies. */
static void parse_running(result_msg_t *m)
{
    char err[ERRBUF_SIZE];
    jf_t p = {m->in.env.payload, "payload", err, sizeof err};
    ts_format_us(m->in.env.timestamp_us, m->reported_at, sizeof m->reported_at);
    if (jf_int(&p, "timeout_s", false, 1, INT32_MAX, &m->timeout_s) != 1)
        m->timeout_s = 0;
}

/* Status (default: running for a status change; failed when an error is given, else
 * completed, for a completion) and whether this message type may report it. */
static int parse_status(result_msg_t *m)
{
    const char *s = NULL;
    char err[ERRBUF_SIZE];
    jf_t p = {m->in.env.payload, "payload", err, sizeof err};
    json_object *error;
    if (jf_string(&p, "status", false, 32, &s) < 0)
        return inmsg_reject(&m->in, "parse_error", "%s", err);
    bool completion = m->in.env.type == MSG_EXECUTION_COMPLETED;
    if (!s) /* an error of null is no error, as everywhere else */
        s = !completion                                 ? "running"
            : jf_value(&p, "error", false, &error) == 1 ? "failed"
                                                        : "completed";
    exec_status_t st;
    bool ok = trans_status_parse(s, &st) == 0 &&
              (completion ? (st == EXEC_COMPLETED || st == EXEC_FAILED || st == EXEC_TIMEOUT ||
                             st == EXEC_CANCELLED)
                          : st == EXEC_RUNNING);
    if (!ok)
        return inmsg_reject(&m->in, "parse_error", "status '%s' cannot be reported by %s", s,
                            m->in.env.type_name);
    m->target = st;
    return 0;
}

/* The handler's ending as the worker reported it; only the known fields, NUL-free text. */
static char *outcome_json(json_object *payload)
{
    static const char *const keys[] = {"exit_code", "signal", "stderr_tail", "truncated",
                                       "duration_ms"};
    json_object *o = json_object_new_object(), *v;
    for (size_t i = 0; o && i < sizeof keys / sizeof keys[0]; i++)
        if (json_object_object_get_ex(payload, keys[i], &v) && v && !jf_has_nul(v))
            json_object_object_add(o, keys[i], json_object_get(v));
    char *text = o && json_object_object_length(o) > 0
                     ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN))
                     : NULL;
    json_object_put(o);
    return text;
}

static int parse_outcome(result_msg_t *m)
{
    char err[ERRBUF_SIZE];
    jf_t p = {m->in.env.payload, "payload", err, sizeof err};
    m->outcome = outcome_json(m->in.env.payload);
    m->has_exit_code = jf_int(&p, "exit_code", false, INT32_MIN, INT32_MAX, &m->exit_code) == 1;
    /* A started_at that names no instant is left out: the completion itself still counts. The
     * database gets the instant in one spelling it reads the same way, so the cast in SQL never
     * fails the batch (the completion would end up a store_error). */
    const char *started;
    int64_t us;
    if (jf_string(&p, "started_at", false, TS_TEXT_MAX - 1, &started) == 1 &&
        ts_parse(started, &us) == 0)
        ts_format_us(us, m->started_at, sizeof m->started_at);
    json_object *result;
    if (jf_value(&p, "result", false, &result) == 1) {
        if (jf_has_nul(result))
            return inmsg_reject(&m->in, "parse_error",
                                "field 'payload.result' holds a NUL character");
        m->result = strdup(json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN));
    }
    const char *text;
    size_t n;
    int rc = jf_text(&p, "error", false, &text, &n);
    if (rc < 0)
        return inmsg_reject(&m->in, "parse_error", "%s", err);
    if (rc == 1)
        m->error_text = utf8_clean(text, utf8_cut(text, n, MAX_ERROR_TEXT));
    return 0;
}

/* The execution and attempt a result names, from its envelope; -1 (m->in rejected) when it
 * names none. */
static int parse_target(result_msg_t *m, const envelope_t *env)
{
    char err[ERRBUF_SIZE];
    int64_t v = 0;
    jf_t p = {env->payload, "payload", err, sizeof err};
    int rc = jf_execution_id(&p, false, &m->execution_id);
    if (rc <= 0)
        return inmsg_reject(&m->in, rc == 0 ? "missing_execution_id" : "parse_error", "%s",
                            rc == 0 ? "the payload has no execution_id" : err);
    m->in.has_execution_id = true;
    m->in.execution_id = m->execution_id;
    m->completion = env->type == MSG_EXECUTION_COMPLETED;
    rc = jf_int(&p, "attempt", false, 1, INT32_MAX, &v);
    if (rc < 0)
        return inmsg_reject(&m->in, "parse_error", "%s", err);
    m->attempt = rc == 1 ? (int)v : env->attempt;
    if (m->attempt < 1)
        return inmsg_reject(&m->in, "parse_error",
                            "no attempt in the payload or the envelope headers");
    return 0;
}

/*
 * A body that is not valid UTF-8 (text cut inside a character) cannot be decoded, so the
 * execution it reports on would never settle. A copy with the bad bytes replaced tells which
 * execution and attempt it names; nothing else is taken from it.
 */
static void salvage_target(result_msg_t *m, const mq_delivery_t *d)
{
    if (d->oversized || utf8_valid(d->body, d->body_len, NULL))
        return;
    char *clean = utf8_clean(d->body, d->body_len);
    envelope_t env;
    char err[ERRBUF_SIZE];
    inmsg_t keep = m->in;
    if (clean && envelope_decode(clean, strlen(clean), &env, err, sizeof err) == 0) {
        if (env.type == MSG_EXECUTION_COMPLETED && parse_target(m, &env) != 0) {
            m->completion = false; /* no attempt to fence by */
            m->in.has_execution_id = false;
        }
        envelope_free(&env);
    }
    bool named = m->in.has_execution_id;
    int64_t id = m->in.execution_id;
    m->in = keep; /* the original rejection stands */
    m->in.has_execution_id = named;
    m->in.execution_id = id;
    free(clean);
}

static int parse_result(result_msg_t *m, const mq_delivery_t *d)
{
    if (inmsg_open(&m->in, d) != 0) {
        salvage_target(m, d);
        return -1;
    }
    msg_type_t t = m->in.env.type;
    if (t != MSG_EXECUTION_STATUS_CHANGED && t != MSG_EXECUTION_COMPLETED)
        return inmsg_reject(&m->in, "unknown_type",
                            "message type '%s' does not belong in the results queue",
                            m->in.env.type_name);
    if (parse_target(m, &m->in.env) != 0)
        return -1;
    parse_worker(m);
    parse_process(m);
    if (parse_status(m) != 0)
        return -1;
    if (m->target == EXEC_RUNNING)
        parse_running(m);
    return m->target == EXEC_RUNNING ? 0 : parse_outcome(m);
}

/* Several messages for one execution in a batch are applied in rounds, in arrival order:
 * one UPDATE cannot apply two source rows to the same target row. */
static int assign_rounds(result_msg_t *msgs, size_t n)
{
    int rounds = 0;
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].in.reason[0])
            continue;
        msgs[i].round = 0;
        for (size_t j = 0; j < i; j++)
            if (!msgs[j].in.reason[0] && msgs[j].execution_id == msgs[i].execution_id)
                msgs[i].round = msgs[j].round + 1;
        if (msgs[i].round + 1 > rounds)
            rounds = msgs[i].round + 1;
    }
    return rounds;
}

/* clang-format off */
/* $1..$8 and $11..$13 are the messages' arrays (A_* below), $9/$10 the guard's pairs. A running
 * report also records the worker's incarnation, when it sent the report (its clock) and the
 * timeout it applies; a completion keeps what the running report said.
 * The guard is a plain condition on the row and the message against the pairs computed once
 * (an InitPlan), never a join with them: when another executor changes the row first (its
 * running report, while this one applies the completion), PostgreSQL rechecks the conditions on
 * the new row version but keeps the join partners it had found for the old one, so a join
 * would still compare ('scheduled', 'failed') and drop a legal running -> failed as stale
 * (found by tests/chaos/faults.sh: the execution stayed running until the monitor abandoned it). */
static const char apply_sql[] =
    "UPDATE executions e SET status = u.status,"
    " started_at = CASE WHEN u.status = " EXEC_SQL(RUNNING) " THEN now()"
    "   ELSE coalesce(e.started_at, u.started_at::timestamptz) END," /* no running status came */
    " result = CASE WHEN u.status = " EXEC_SQL(RUNNING) " THEN e.result"
    "   ELSE u.result::jsonb END,"
    " error = CASE WHEN u.status = " EXEC_SQL(RUNNING) " THEN e.error ELSE u.error END,"
    " outcome = CASE WHEN u.status = " EXEC_SQL(RUNNING) " THEN e.outcome"
    "   ELSE u.outcome::jsonb END,"
    " ended_at = CASE WHEN u.status = " EXEC_SQL(RUNNING) " THEN e.ended_at ELSE now() END,"
    " incarnation = coalesce(u.incarnation, e.incarnation),"
    " reported_at = CASE WHEN u.status = " EXEC_SQL(RUNNING) " THEN u.reported_at::timestamptz"
    "   ELSE e.reported_at END,"
    " effective_timeout_s = CASE WHEN u.status = " EXEC_SQL(RUNNING)
    "   THEN coalesce(u.timeout_s, e.effective_timeout_s) ELSE e.effective_timeout_s END,"
    " wait_reason = NULL"
    " FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[],"
    "   $7::text[], $8::text[], $11::text[], $12::text[], $13::int[])"
    "   WITH ORDINALITY AS u(id, attempt, status, worker, result, error, outcome, started_at,"
    "   incarnation, reported_at, timeout_s, ord)"
    " JOIN executions o ON o.id = u.id" /* the row as it was, for the metrics */
    " WHERE e.id = u.id AND e.attempt = u.attempt AND (u.worker IS NULL OR e.worker = u.worker)"
    "   AND e.status <> " EXEC_SQL(REQUESTED) /* retried: that attempt is over (retries.md) */
    "   AND (e.status || '>' || u.status) = ANY (ARRAY(SELECT f || '>' || t"
    "     FROM unnest($9::text[], $10::text[]) AS p(f, t)))"
    " RETURNING u.ord,"
    " CASE WHEN o.started_at IS NULL THEN extract(epoch FROM e.started_at - e.created_at) END,"
    " CASE WHEN u.status <> " EXEC_SQL(RUNNING) " THEN"
    "   extract(epoch FROM e.ended_at - coalesce(e.started_at, e.created_at)) END,"
    " o.status, u.status";

/* What a worker reported after a cancel and that changed nothing stays in the history. */
static const char after_cancel_sql[] =
    "INSERT INTO execution_events (execution_id, from_status, to_status, worker, attempt, error,"
    " applied, note)"
    " SELECT e.id, e.status, u.status, u.worker, u.attempt, u.error, false,"
    " 'reported after the cancel; not applied'"
    " FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[])"
    "   WITH ORDINALITY AS u(id, attempt, status, worker, error, ord)"
    " JOIN executions e ON e.id = u.id WHERE e.cancelled_by IS NOT NULL ORDER BY u.ord";
/* clang-format on */

/* The arrays of apply_sql, in parameter order ($9 and $10 come between A_STARTED and A_INC). */
enum {
    A_ID,
    A_ATTEMPT,
    A_STATUS,
    A_WORKER,
    A_RESULT,
    A_ERROR,
    A_OUTCOME,
    A_STARTED,
    A_INCARNATION,
    A_REPORTED,
    A_TIMEOUT,
    A_COUNT
};

/* The guard: every legal (from, to) pair into the statuses workers report; and cancelled,
 * which a worker reports only for an execution the executor asked it to cancel. */
static int guard_literals(char *from, char *to, size_t len)
{
    static const exec_status_t reported[] = {EXEC_RUNNING, EXEC_COMPLETED, EXEC_FAILED,
                                             EXEC_TIMEOUT};
    if (trans_pairs_literal(reported, 4, from, to, len) != 0)
        return -1;
    size_t f = strlen(from), t = strlen(to);
    const char *add_from = "," EXEC_NAME_CANCELING "}", *add_to = "," EXEC_NAME_CANCELLED "}";
    if (f < 2 || t < 2 || f + strlen(add_from) >= len || t + strlen(add_to) >= len)
        return -1;
    snprintf(from + f - 1, len - f + 1, "%s", add_from);
    snprintf(to + t - 1, len - t + 1, "%s", add_to);
    return 0;
}

static void add_round_message(pgarr_t *a, const result_msg_t *m)
{
    pgarr_add_int(&a[A_ID], m->execution_id);
    pgarr_add_int(&a[A_ATTEMPT], m->attempt);
    pgarr_add(&a[A_STATUS], trans_status_name(m->target));
    pgarr_add(&a[A_WORKER], m->worker[0] ? m->worker : NULL);
    pgarr_add(&a[A_RESULT], m->result);
    pgarr_add(&a[A_ERROR], m->error_text);
    pgarr_add(&a[A_OUTCOME], m->outcome);
    pgarr_add(&a[A_STARTED], m->started_at[0] ? m->started_at : NULL);
    pgarr_add(&a[A_INCARNATION], m->incarnation[0] ? m->incarnation : NULL);
    pgarr_add(&a[A_REPORTED], m->reported_at[0] ? m->reported_at : NULL);
    pgarr_add_int_or_null(&a[A_TIMEOUT], m->timeout_s > 0, m->timeout_s);
}

/* A step of the happy path, which the history does not store (schema 029): counted here. The
 * batch's counts are merged once it committed (consumer.c). */
static void count_happy(executor_stats_t *counts, const char *from, const char *to)
{
    exec_status_t f, t;
    if (trans_status_parse(from, &f) != 0 || trans_status_parse(to, &t) != 0)
        return;
    if ((f == EXEC_SCHEDULED && (t == EXEC_RUNNING || t == EXEC_COMPLETED)) ||
        (f == EXEC_RUNNING && t == EXEC_COMPLETED))
        counts->happy[f][t]++;
}

/* One UPDATE for the messages of round `round`; marks those it applied. */
static int apply_round(PGconn *db, result_msg_t *msgs, size_t n, int round,
                       executor_stats_t *counts, char *err, size_t errlen)
{
    pgarr_t a[A_COUNT];
    size_t *index = calloc(n, sizeof *index);
    size_t k = 0;
    for (int i = 0; i < A_COUNT; i++)
        pgarr_init(&a[i]);
    for (size_t i = 0; index && i < n; i++)
        if (!msgs[i].in.reason[0] && msgs[i].round == round) {
            add_round_message(a, &msgs[i]);
            index[k++] = i;
        }
    enum { NPARAMS = A_COUNT + 2 };
    char from[1024], to[1024];
    const char *params[NPARAMS] = {NULL};
    int rc = guard_literals(from, to, sizeof from);
    for (int i = 0; i < A_COUNT && rc == 0; i++) /* the guard's two sit after A_STARTED */
        if (!(params[i < A_INCARNATION ? i : i + 2] = pgarr_text(&a[i])))
            rc = -1;
    params[A_INCARNATION] = from;
    params[A_INCARNATION + 1] = to;
    PGresult *res = NULL;
    if (rc != 0 || !index) {
        snprintf(err, errlen, "out of memory");
        rc = -1; /* never commit and ack a batch that was not applied */
    } else {
        rc = db_exec(db, apply_sql, NPARAMS, params, &res, err, errlen);
    }
    for (int r = 0; rc == 0 && r < PQntuples(res); r++) {
        long ord = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (ord >= 1 && (size_t)ord <= k)
            msgs[index[ord - 1]].applied = true;
        if (!PQgetisnull(res, r, 1))
            metrics_hist_observe(&counts->submit_to_start, atof(PQgetvalue(res, r, 1)));
        if (!PQgetisnull(res, r, 2))
            metrics_hist_observe(&counts->start_to_end, atof(PQgetvalue(res, r, 2)));
        count_happy(counts, PQgetvalue(res, r, 3), PQgetvalue(res, r, 4));
    }
    PQclear(res);
    free(index);
    for (int i = 0; i < A_COUNT; i++)
        pgarr_free(&a[i]);
    return rc;
}

/* Reports that changed nothing, for executions somebody cancelled: kept in the history. */
static int record_after_cancel(PGconn *db, const result_msg_t *msgs, size_t n,
                               executor_stats_t *counts, char *err, size_t errlen)
{
    enum { NARRAYS = 5 };
    pgarr_t a[NARRAYS];
    for (int i = 0; i < NARRAYS; i++)
        pgarr_init(&a[i]);
    for (size_t i = 0; i < n; i++) {
        const result_msg_t *m = &msgs[i];
        if (m->in.reason[0] || m->applied)
            continue;
        pgarr_add_int(&a[0], m->execution_id);
        pgarr_add_int(&a[1], m->attempt);
        pgarr_add(&a[2], trans_status_name(m->target));
        pgarr_add(&a[3], m->worker[0] ? m->worker : NULL);
        pgarr_add(&a[4], m->error_text);
    }
    int rc = 0;
    if (a[0].n > 0) {
        const char *params[NARRAYS];
        for (int i = 0; i < NARRAYS && rc == 0; i++)
            if (!(params[i] = pgarr_text(&a[i]))) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
            }
        PGresult *res = NULL;
        if (rc == 0)
            rc = db_exec(db, after_cancel_sql, NARRAYS, params, &res, err, errlen);
        if (rc == 0)
            counts->results_after_cancel += strtoull(PQcmdTuples(res), NULL, 10);
        PQclear(res);
    }
    for (int i = 0; i < NARRAYS; i++)
        pgarr_free(&a[i]);
    return rc;
}

/* clang-format off */
static const char fail_unprocessable_sql[] =
    "UPDATE executions e SET status = " EXEC_SQL(FAILED) ", error = u.error,"
    " result = jsonb_build_object('error', u.error, 'worker', u.worker, 'attempt', u.attempt),"
    " wait_reason = NULL"
    " FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[]) AS u(id, attempt, error, worker)"
    " WHERE e.id = u.id AND e.attempt = u.attempt AND e.status = ANY($5::text[])"
    "   AND e.status <> " EXEC_SQL(REQUESTED) " AND (u.worker IS NULL OR e.worker = u.worker)"
    " RETURNING e.id";
/* clang-format on */

/* Fail the attempts of the unprocessable completions, in one attempt-fenced CAS. */
static int fail_unprocessable(PGconn *db, const result_msg_t *msgs, size_t n,
                              executor_stats_t *counts, char *err, size_t errlen)
{
    pgarr_t a[4];
    size_t want = 0;
    for (int i = 0; i < 4; i++)
        pgarr_init(&a[i]);
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].unprocessable)
            continue;
        char error[ERRBUF_SIZE + 64];
        snprintf(error, sizeof error, UNAPPLIED_ERROR ": %s", msgs[i].in.error);
        pgarr_add_int(&a[0], msgs[i].execution_id);
        pgarr_add_int(&a[1], msgs[i].attempt);
        pgarr_add(&a[2], error);
        pgarr_add(&a[3], msgs[i].worker[0] ? msgs[i].worker : NULL);
        want++;
    }
    char sources[256];
    const char *params[5] = {pgarr_text(&a[0]), pgarr_text(&a[1]), pgarr_text(&a[2]),
                             pgarr_text(&a[3]), sources};
    int rc = trans_sources_literal(EXEC_FAILED, sources, sizeof sources);
    for (int i = 0; i < 4; i++)
        if (!params[i])
            rc = -1;
    PGresult *res = NULL;
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    else if (want > 0 &&
             (rc = db_exec(db, fail_unprocessable_sql, 5, params, &res, err, errlen)) == 0)
        counts->results_unprocessable += (uint64_t)PQntuples(res);
    PQclear(res);
    for (int i = 0; i < 4; i++)
        pgarr_free(&a[i]);
    return rc;
}

/* Mark the messages not applied because their execution is on a later attempt, because
 * that attempt was dispatched to another worker than the one reporting, or because the
 * executor never dispatched that attempt at all. */
static void mark_unapplied(result_msg_t *msgs, size_t n, int64_t id, int attempt,
                           const char *worker)
{
    for (size_t i = 0; i < n; i++) {
        result_msg_t *m = &msgs[i];
        if (m->in.reason[0] || m->applied || m->execution_id != id)
            continue;
        if (m->attempt > attempt) {
            m->foreign = true;
            inmsg_reject(&m->in, "not_dispatched",
                         "a report of attempt %d; the executor dispatched this execution %d "
                         "time(s): nobody was sent that attempt",
                         m->attempt, attempt);
        } else if (m->attempt < attempt) {
            m->older_attempt = true;
            inmsg_reject(&m->in, "stale_attempt_result",
                         "a result of attempt %d; the execution is on attempt %d: a copy of an "
                         "earlier dispatch ran too",
                         m->attempt, attempt);
        } else if (m->attempt == attempt && m->worker[0] && strcmp(m->worker, worker) != 0) {
            m->wrong_worker = true;
            inmsg_reject(&m->in, "wrong_worker",
                         "a report from worker '%s' on attempt %d, which was dispatched to "
                         "worker '%s'",
                         m->worker, attempt, worker);
        }
    }
}

/* The messages the lookup did not find: their execution does not exist (a forged report, or
 * one of a dispatch the executor never sent). */
static void mark_missing(result_msg_t *msgs, size_t n, PGresult *found)
{
    for (size_t i = 0; i < n; i++) {
        result_msg_t *m = &msgs[i];
        if (m->in.reason[0] || m->applied)
            continue;
        bool seen = false;
        for (int r = 0; found && !seen && r < PQntuples(found); r++)
            seen = strtoll(PQgetvalue(found, r, 0), NULL, 10) == m->execution_id;
        if (!seen) {
            m->foreign = true;
            inmsg_reject(&m->in, "execution_missing",
                         "a report on execution %" PRId64 ", which does not exist",
                         m->execution_id);
        }
    }
}

/*
 * A result of an attempt older than the row's comes from a copy of an earlier dispatch that ran
 * after all (its publish had no answer, and the execution went out again). It changes nothing,
 * but it must leave a trace, so such a run is never silent: a dead letter each, reason
 * stale_attempt_result. A report from a worker the attempt was not dispatched to (a confused
 * or a lying worker) is kept the same way, reason wrong_worker. A report on an execution that
 * does not exist (execution_missing), or of an attempt past the row's (not_dispatched), comes
 * from a dispatch the executor never sent: recorded for an investigator. Only the messages that
 * were not applied are looked at.
 */
static int note_older_attempts(PGconn *db, result_msg_t *msgs, size_t n, char *err, size_t errlen)
{
    pgarr_t ids;
    pgarr_init(&ids);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].in.reason[0] && !msgs[i].applied) {
            pgarr_add_int(&ids, msgs[i].execution_id);
            k++;
        }
    const char *params[] = {pgarr_text(&ids)};
    PGresult *res = NULL;
    int rc = 0;
    if (!params[0]) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (k > 0) {
        rc = db_exec(db,
                     "SELECT id, attempt, coalesce(worker, '') FROM executions"
                     " WHERE id = ANY($1::bigint[])",
                     1, params, &res, err, errlen);
    }
    for (int r = 0; rc == 0 && res && r < PQntuples(res); r++)
        mark_unapplied(msgs, n, strtoll(PQgetvalue(res, r, 0), NULL, 10),
                       atoi(PQgetvalue(res, r, 1)), PQgetvalue(res, r, 2));
    if (rc == 0 && k > 0)
        mark_missing(msgs, n, res);
    PQclear(res);
    pgarr_free(&ids);
    return rc;
}

/* The attempts the batch ended (applied completions, unprocessable ones that failed their
 * attempt): recorded, and retried when their policy says so (attempts.h). */
static int end_attempts(PGconn *db, result_msg_t *msgs, size_t n, executor_stats_t *counts,
                        char *err, size_t errlen)
{
    attempt_end_t *ends = calloc(n + 1, sizeof *ends);
    size_t k = 0;
    if (!ends) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        result_msg_t *m = &msgs[i];
        bool ended = m->unprocessable ||
                     (!m->in.reason[0] && m->applied && m->target != EXEC_RUNNING);
        if (!ended)
            continue;
        const char *status = trans_status_name(m->unprocessable ? EXEC_FAILED : m->target);
        ends[k++] = (attempt_end_t){
            .id = m->execution_id,
            .attempt = m->attempt,
            .status = status,
            .outcome = m->unprocessable
                           ? OUTCOME_FAILED
                           : attempts_outcome_of(status, m->has_exit_code, (int)m->exit_code),
            .exit_code = (int)m->exit_code,
            .has_exit_code = m->has_exit_code && !m->unprocessable};
    }
    int rc = attempts_end(db, ends, k, counts, err, errlen);
    free(ends);
    return rc;
}

/* Unprocessable completions fail their attempt, the rounds are applied in order, the attempts
 * that ended are recorded and perhaps retried, a report that changed nothing for a cancelled
 * execution joins its history, and every message that cannot be used or came from an older
 * attempt becomes a dead letter. */
static int results_work(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    result_msg_t *msgs = b->items;
    int rounds = assign_rounds(msgs, b->n);
    if (fail_unprocessable(db, msgs, b->n, &b->counts, err, errlen) != 0)
        return -1;
    for (int r = 0; r < rounds; r++)
        if (apply_round(db, msgs, b->n, r, &b->counts, err, errlen) != 0)
            return -1;
    if (end_attempts(db, msgs, b->n, &b->counts, err, errlen) != 0)
        return -1;
    if (note_older_attempts(db, msgs, b->n, err, errlen) != 0 ||
        record_after_cancel(db, msgs, b->n, &b->counts, err, errlen) != 0 ||
        dlstore_unusable(db, msgs, b->n, sizeof *msgs, b->queue, &b->counts, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < b->n; i++)
        if (!msgs[i].in.reason[0] || msgs[i].older_attempt || msgs[i].wrong_worker ||
            msgs[i].foreign) {
            b->counts.results_applied += msgs[i].applied;
            b->counts.results_stale += !msgs[i].applied;
        }
    return 0;
}

/* A completion that names its execution and attempt but cannot be applied: it fails that
 * attempt rather than leaving it running forever; its dead letter keeps the reason. */
static void mark_unprocessable(result_msg_t *m)
{
    m->unprocessable = true;
    snprintf(m->in.reason, sizeof m->in.reason, "unprocessable_result");
}

/* per_worker: the worker a report speaks for is its sender, as the broker vouches for it; a
 * report naming another worker, or none, is refused whatever else is wrong with it (and never
 * fails the attempt it names). -1 when refused. */
static int check_sender(result_msg_t *m, const mq_delivery_t *d)
{
    char err[ERRBUF_SIZE];
    if (!ident_per_worker())
        return 0;
    m->in.d = d;
    if (ident_check_worker(d, m->worker, err, sizeof err) != 0)
        return inmsg_reject(&m->in, IDENT_REASON, "%s", err);
    if (!ids_worker_valid(d->user_id))
        return inmsg_reject(&m->in, IDENT_REASON, "sent by broker user '%s', not a worker id",
                            d->user_id);
    snprintf(m->worker, sizeof m->worker, "%s", d->user_id);
    return 0;
}

static void results_parse(void *item, const mq_delivery_t *d, const char *queue)
{
    (void)queue;
    result_msg_t *m = item;
    char err[ERRBUF_SIZE];
    int rc = parse_result(m, d);
    if (sign_check(d, err, sizeof err) != 0) { /* recorded with what it names; fails nothing */
        m->in.d = d;
        inmsg_reject(&m->in, SIGN_REASON, "%s", err);
        return;
    }
    if (check_sender(m, d) == 0 && rc != 0 && m->completion && m->attempt >= 1)
        mark_unprocessable(m);
}

static void log_outcome(const void *item, const char *queue)
{
    const result_msg_t *m = item;
    char id[24], attempt[16], occ[24];
    if (m->in.reason[0] && m->in.occurrences == 0)
        return; /* folded into an earlier message's record, whose line counts it */
    inmsg_occurrences(&m->in, occ, sizeof occ);
    snprintf(id, sizeof id, "%" PRId64, m->execution_id);
    snprintf(attempt, sizeof attempt, "%d", m->attempt);
    if (m->older_attempt) {
        log_kv(LOG_WARN, "result of an older attempt: a copy of an earlier dispatch ran too",
               "execution_id", id, "attempt", attempt, "worker", m->worker, "error", m->in.error,
               NULL);
    } else if (m->wrong_worker) {
        log_kv(LOG_WARN, "report from a worker the execution was not dispatched to: ignored",
               "execution_id", id, "attempt", attempt, "worker", m->worker, "error", m->in.error,
               NULL);
    } else if (m->foreign) {
        log_kv(LOG_WARN, "report of a dispatch the executor never sent: recorded", "execution_id",
               id, "attempt", attempt, "worker", m->worker, "reason", m->in.reason, "error",
               m->in.error, "occurrences", occ, NULL);
    } else if (m->unprocessable) {
        log_kv(LOG_WARN, "completion cannot be applied: execution failed", "execution_id", id,
               "attempt", attempt, "worker", m->worker, "error", m->in.error, NULL);
    } else if (!strcmp(m->in.reason, SIGN_REASON)) {
        log_kv(LOG_WARN, "report refused: its signature does not verify", "execution_id", id,
               "error", m->in.error, "queue", queue, "occurrences", occ, NULL);
    } else if (!strcmp(m->in.reason, IDENT_REASON)) {
        log_kv(LOG_WARN, "report refused: not sent by the worker it speaks for", "execution_id", id,
               "error", m->in.error, "occurrences", occ, NULL);
    } else if (m->in.reason[0]) {
        log_kv(LOG_WARN, "unreadable result message stored as a dead letter", "reason",
               m->in.reason, "error", m->in.error, "queue", queue, "occurrences", occ, NULL);
    } else if (m->applied) {
        log_kv(m->target == EXEC_RUNNING ? LOG_DEBUG : LOG_INFO, "execution status changed",
               "execution_id", id, "status", trans_status_name(m->target), "worker", m->worker,
               "attempt", attempt, NULL);
    } else {
        log_kv(LOG_DEBUG, "stale result ignored (attempt or status fence)", "execution_id", id,
               "status", trans_status_name(m->target), "worker", m->worker, "attempt", attempt,
               NULL);
    }
}

static void results_free(void *item)
{
    result_msg_t *m = item;
    inmsg_close(&m->in);
    free(m->result);
    free(m->error_text);
    free(m->outcome);
}

/* One message whose transaction the database refused (a number out of jsonb's range, say):
 * a completion fails its attempt with the database's reason, anything else is stored with
 * its execution id; if even that is refused, the consumer stores it raw. */
static int refused_work(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    result_msg_t *msgs = b->items;
    for (size_t i = 0; i < b->n; i++) {
        result_msg_t *m = &msgs[i];
        if (m->in.reason[0])
            continue; /* its dead letter was refused: the raw record is next */
        inmsg_reject(&m->in, "store_error", "the database refused it: %s",
                     b->refused ? b->refused : "");
        if (m->completion)
            mark_unprocessable(m);
    }
    if (fail_unprocessable(db, msgs, b->n, &b->counts, err, errlen) != 0 ||
        end_attempts(db, msgs, b->n, &b->counts, err, errlen) != 0)
        return -1;
    return dlstore_unusable(db, msgs, b->n, sizeof *msgs, b->queue, &b->counts, err, errlen);
}

static const consumer_handler_t results_refused_handler = {.what = "failing what cannot be applied",
                                                           .item_size = sizeof(result_msg_t),
                                                           .parse = results_parse,
                                                           .work = refused_work,
                                                           .log_item = log_outcome,
                                                           .free_item = results_free};

const consumer_handler_t results_handler = {.what = "applying results",
                                            .item_size = sizeof(result_msg_t),
                                            .parse = results_parse,
                                            .work = results_work,
                                            .log_item = log_outcome,
                                            .free_item = results_free,
                                            .on_refused = &results_refused_handler};
