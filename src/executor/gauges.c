/*
 * Gauges of /metrics that need the database or the broker, refreshed every GAUGES_INTERVAL_MS
 * by a timer so a scrape never waits on either: the backlog by status, the live workers (in
 * all and per action), and the dead-letter queue. The oldest unconsumed dead letter's age is
 * measured cheaply: a passive declare gives the count, not the age, so the age is how long the
 * queue has had something not yet stored (ready in the queue or held unacked by this
 * executor) without a break, as seen by these refreshes, or the exact age (x-death) of the
 * oldest one held unacked when that is more: a lower bound, GAUGES_INTERVAL_MS fine. The same
 * refresh counts the status changes (warren_execution_transitions_total) from the history,
 * and the open investigation records by resolution with the oldest one's age: the count from the
 * dead-letter tallies (schema 027: a few rows, folded every 64), the age from the first entry of
 * dead_letters_resolution_idx (resolution, received_at); neither reads the records.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "executor/dlq_handler.h"
#include "executor/gauges.h"
#include "warren/db.h"
#include "warren/exec_status.h"
#include "warren/log.h"
#include "warren/topology.h"

/* clang-format off */
static const char backlog_sql[] =
    "SELECT status, count(*) FROM executions WHERE status IN (" EXEC_SQL(REQUESTED) ", "
    EXEC_SQL(SCHEDULING) ", " EXEC_SQL(SCHEDULED) ", " EXEC_SQL(RUNNING) ", " EXEC_SQL(CANCELING)
    ") GROUP BY status";

/* Every action a worker seen in the last week offers, with how many live workers offer it: an
 * action whose workers are all gone stays at 0, which is what an alert wants to see. */
static const char actions_sql[] =
    "SELECT a.action, count(*) FILTER (WHERE a.live) FROM (SELECT unnest(w.capabilities) AS action,"
    " warren_worker_live(w, $1::int) AS live"
    " FROM workers w WHERE w.last_heartbeat > now() - interval '7 days') a"
    " GROUP BY a.action ORDER BY a.action LIMIT 64";

/* The paused actions (schema 035) with how long ago, and the requested executions that wait
 * because their action is paused (in the first row; each action's own count is not needed). */
static const char paused_sql[] =
    "SELECT p.action_ref, extract(epoch FROM now() - p.paused_at),"
    " (SELECT count(*) FROM executions e JOIN action_pauses q ON q.action_ref = e.action_ref"
    "  WHERE e.status = " EXEC_SQL(REQUESTED) " AND q.resumed_at IS NULL)"
    " FROM action_pauses p WHERE p.resumed_at IS NULL ORDER BY p.action_ref LIMIT 64";

/* Status changes: events are counted once every event up to an id is older than
 * TRANSITIONS_LAG_S, so one a transaction still holds (ids are taken before commit) is not
 * skipped; the executor's and the CLI's transactions are bounded far below that. $1: the last
 * id counted. */
#define TRANSITIONS_LAG_S "10"
static const char events_upto_sql[] =
    "SELECT coalesce((SELECT min(id) - 1 FROM execution_events WHERE id > $1::bigint"
    "   AND at >= now() - interval '" TRANSITIONS_LAG_S " seconds'),"
    " (SELECT max(id) FROM execution_events WHERE id > $1::bigint), $1::bigint)";
/* Steps written down later (implied, schema 029) were counted when they happened, by the
 * executor that made them (executor_stats_t.happy); creations are counted from executions. */
static const char transitions_sql[] =
    "SELECT from_status, to_status, count(*) FROM execution_events"
    " WHERE id > $1::bigint AND id <= $2::bigint AND applied AND NOT implied"
    "   AND from_status IS NOT NULL GROUP BY 1, 2";
/* Creations: executions whose ids are past the last counted, the same 10 s behind. */
static const char created_upto_sql[] =
    "SELECT coalesce((SELECT min(id) - 1 FROM executions WHERE id > $1::bigint"
    "   AND created_at >= now() - interval '" TRANSITIONS_LAG_S " seconds'),"
    " (SELECT max(id) FROM executions WHERE id > $1::bigint), $1::bigint)";
static const char created_sql[] =
    "SELECT count(*) FROM executions WHERE id > $1::bigint AND id <= $2::bigint";

/* Open records, pending then investigating: how many, and the oldest one's age in seconds. */
static const char open_sql[] =
    "SELECT r.resolution,"
    " coalesce((SELECT sum(t.n) FROM dead_letter_tallies t WHERE t.resolution = r.resolution), 0),"
    " coalesce(extract(epoch FROM now() - (SELECT min(d.received_at) FROM dead_letters d"
    "   WHERE d.resolution = r.resolution)), 0)"
    " FROM (VALUES (1, 'pending'), (2, 'investigating')) AS r(i, resolution) ORDER BY r.i";

static const char live_sql[] =
    "SELECT count(*) FROM workers w WHERE warren_worker_live(w, $1::int)";
/* clang-format on */

typedef struct refresh {
    gauges_t *job;
    gauges_values_t g;
} refresh_t;

#define ID_TEXT 24

/* Where a count of new rows stops: on the first call (last < 0) max(id) by first_sql, else
 * upto_sql's answer for rows after last (its text in after). */
static int count_upto(PGconn *db, int64_t last, const char *first_sql, const char *upto_sql,
                      char after[ID_TEXT], char upto[ID_TEXT], char *err, size_t errlen)
{
    snprintf(after, ID_TEXT, "%" PRId64, last);
    const char *p[] = {after};
    PGresult *u = NULL;
    int rc = db_exec(db, last < 0 ? first_sql : upto_sql, last < 0 ? 0 : 1, p, &u, err, errlen);
    if (rc == 0)
        snprintf(upto, ID_TEXT, "%s", PQgetvalue(u, 0, 0));
    PQclear(u);
    return rc;
}

/* Add the executions created since g->created_upto; the first call only sets it. */
static int count_created(PGconn *db, gauges_values_t *g, char *err, size_t errlen)
{
    char after[ID_TEXT], upto[ID_TEXT];
    if (count_upto(db, g->created_upto, "SELECT coalesce(max(id), 0) FROM executions",
                   created_upto_sql, after, upto, err, errlen) != 0)
        return -1;
    if (g->created_upto >= 0) {
        const char *p[] = {after, upto};
        PGresult *c = NULL;
        int rc = db_exec(db, created_sql, 2, p, &c, err, errlen);
        if (rc == 0)
            g->transitions[EXEC_STATUS_COUNT][EXEC_REQUESTED] += strtoull(PQgetvalue(c, 0, 0), NULL,
                                                                          10);
        PQclear(c);
        if (rc != 0)
            return rc;
    }
    g->created_upto = strtoll(upto, NULL, 10);
    return 0;
}

/* Add the status changes recorded since g->events_upto, then the creations; the first call
 * only sets where they start (the counters start at 0 with the process, as every counter
 * does). */
static int count_transitions(PGconn *db, gauges_values_t *g, char *err, size_t errlen)
{
    char after[ID_TEXT], upto[ID_TEXT];
    if (count_upto(db, g->events_upto, "SELECT coalesce(max(id), 0) FROM execution_events",
                   events_upto_sql, after, upto, err, errlen) != 0)
        return -1;
    int rc = 0;
    if (g->events_upto >= 0) {
        const char *p2[] = {after, upto};
        PGresult *t = NULL;
        rc = db_exec(db, transitions_sql, 2, p2, &t, err, errlen);
        for (int i = 0; rc == 0 && i < PQntuples(t); i++) {
            exec_status_t from, to;
            if (trans_status_parse(PQgetvalue(t, i, 0), &from) == 0 &&
                trans_status_parse(PQgetvalue(t, i, 1), &to) == 0)
                g->transitions[from][to] += strtoull(PQgetvalue(t, i, 2), NULL, 10);
        }
        PQclear(t);
    }
    if (rc == 0)
        g->events_upto = strtoll(upto, NULL, 10);
    return rc == 0 ? count_created(db, g, err, errlen) : rc;
}

/* The breakers' states as the session setting warren.breakers, which the snapshot of every
 * dead-letter record written on this connection takes (schema 020, warren_dl_snapshot): set on
 * the jobs lane with the refresh, and on the writes lane (the consumers' dead letters). */
static int record_breakers(PGconn *db, gauges_t *job, char *err, size_t errlen)
{
    const consumer_set_t *consumers = job->consumers;
    json_object *b = json_object_new_object();
    json_object_object_add(b, "publish",
                           json_object_new_string(breaker_state_name(mq_breaker(job->pub)->state)));
    for (size_t i = 0; i < consumers->n; i++) {
        const consumer_t *c = consumers->c[i];
        char name[64];
        snprintf(name, sizeof name, "consume_%s", c->name);
        json_object_object_add(
            b, name, json_object_new_string(breaker_state_name(mq_breaker(c->mq)->state)));
    }
    const char *p[] = {json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN)};
    int rc = db_exec(db, "SELECT set_config('warren.breakers', $1, false)", 1, p, NULL, err,
                     errlen);
    json_object_put(b);
    return rc;
}

static int breakers_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    return record_breakers(db, arg, err, errlen);
}

static int read_paused(PGconn *db, gauges_values_t *g, char *err, size_t errlen)
{
    PGresult *res = NULL;
    if (db_exec(db, paused_sql, 0, NULL, &res, err, errlen) != 0)
        return -1;
    size_t max = sizeof g->paused / sizeof g->paused[0];
    for (int i = 0; i < PQntuples(res) && g->n_paused < max; i++) {
        snprintf(g->paused[g->n_paused].action, sizeof g->paused[0].action, "%s",
                 PQgetvalue(res, i, 0));
        g->paused[g->n_paused++].age = strtod(PQgetvalue(res, i, 1), NULL);
    }
    g->waiting_paused = PQntuples(res) > 0 ? strtoll(PQgetvalue(res, 0, 2), NULL, 10) : 0;
    PQclear(res);
    return 0;
}

static int refresh_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    refresh_t *r = arg;
    if (record_breakers(db, r->job, err, errlen) != 0)
        return -1;
    char factor[16];
    snprintf(factor, sizeof factor, "%d", r->job->cfg->executor.heartbeat_stale_factor);
    const char *params[] = {factor};
    PGresult *b = NULL, *a = NULL, *l = NULL, *o = NULL;
    int rc = db_exec(db, backlog_sql, 0, NULL, &b, err, errlen);
    if (rc == 0)
        rc = db_exec(db, open_sql, 0, NULL, &o, err, errlen);
    for (int i = 0; rc == 0 && i < PQntuples(o) && i < 2; i++) {
        r->g.dl_open[i] = strtoll(PQgetvalue(o, i, 1), NULL, 10);
        r->g.dl_open_oldest_age[i] = strtod(PQgetvalue(o, i, 2), NULL);
    }
    PQclear(o);
    if (rc == 0)
        rc = db_exec(db, actions_sql, 1, params, &a, err, errlen);
    if (rc == 0)
        rc = db_exec(db, live_sql, 1, params, &l, err, errlen);
    for (int i = 0; rc == 0 && i < PQntuples(b); i++) {
        exec_status_t st;
        if (trans_status_parse(PQgetvalue(b, i, 0), &st) == 0)
            r->g.backlog[st] = strtoll(PQgetvalue(b, i, 1), NULL, 10);
    }
    size_t max = sizeof r->g.actions / sizeof r->g.actions[0];
    for (int i = 0; rc == 0 && i < PQntuples(a) && r->g.n_actions < max; i++) {
        snprintf(r->g.actions[r->g.n_actions].action, sizeof r->g.actions[0].action, "%s",
                 PQgetvalue(a, i, 0));
        r->g.actions[r->g.n_actions++].live = strtoll(PQgetvalue(a, i, 1), NULL, 10);
    }
    if (rc == 0)
        r->g.live_workers = strtoll(PQgetvalue(l, 0, 0), NULL, 10);
    if (rc == 0)
        rc = read_paused(db, &r->g, err, errlen);
    PQclear(b);
    PQclear(a);
    PQclear(l);
    return rc == 0 ? count_transitions(db, &r->g, err, errlen) : rc;
}

static void refresh_dlq(gauges_t *job, gauges_values_t *g)
{
    if (!job->cfg->rabbitmq.dead_letter.enabled)
        return;
    char err[ERRBUF_SIZE];
    int64_t ready = 0;
    /* On the admin connection: never blocked by a resource alarm, never in a fiber's publish. */
    bool up = mq_connected(job->admin) || mq_try_connect(job->admin) == MQ_OK;
    if (!up || topo_queue_messages(job->admin, job->cfg->rabbitmq.dead_letter.queue, &ready, err,
                                   sizeof err) != 0)
        ready = g->dlq_messages; /* unknown now: keep the last count */
    g->dlq_messages = ready;
    int64_t now = now_wall_ms();
    bool waiting = ready > 0 || consumer_unacked(job->dlq) > 0;
    if (!waiting)
        g->dlq_nonempty_since_ms = 0;
    else if (!g->dlq_nonempty_since_ms)
        g->dlq_nonempty_since_ms = now;
    double seen = waiting ? (double)(now - g->dlq_nonempty_since_ms) / 1000.0 : 0;
    double held = (double)dlq_held_age_s(job->dlq, job->parked); /* exact, from x-death */
    g->dlq_oldest_age = held > seen ? held : seen;
}

void gauges_run(gauges_t *job)
{
    refresh_t r = {.job = job};
    r.g.dlq_messages = job->values.dlq_messages;
    r.g.dlq_nonempty_since_ms = job->values.dlq_nonempty_since_ms;
    memcpy(r.g.transitions, job->values.transitions, sizeof r.g.transitions);
    r.g.events_upto = job->values.events_upto;
    r.g.created_upto = job->values.created_upto;
    (void)dbc_statement(job->writes, "recording the breakers' states", breakers_fn, job);
    if (dbc_transaction(job->db, "refreshing the metrics' gauges", refresh_fn, &r) == DBC_OK) {
        r.g.db_ok = true;
        r.g.refreshed_ms = now_wall_ms();
    } else { /* keep the database's last known values */
        memcpy(r.g.backlog, job->values.backlog, sizeof r.g.backlog);
        memcpy(r.g.actions, job->values.actions, sizeof r.g.actions);
        r.g.n_actions = job->values.n_actions;
        memcpy(r.g.paused, job->values.paused, sizeof r.g.paused);
        r.g.n_paused = job->values.n_paused;
        r.g.waiting_paused = job->values.waiting_paused;
        r.g.live_workers = job->values.live_workers;
        memcpy(r.g.dl_open, job->values.dl_open, sizeof r.g.dl_open);
        memcpy(r.g.dl_open_oldest_age, job->values.dl_open_oldest_age,
               sizeof r.g.dl_open_oldest_age);
        r.g.refreshed_ms = job->values.refreshed_ms;
        memcpy(r.g.transitions, job->values.transitions, sizeof r.g.transitions);
        r.g.events_upto = job->values.events_upto;
        r.g.created_upto = job->values.created_upto;
    }
    refresh_dlq(job, &r.g);
    job->values = r.g;
}

/* The samples of family name for the open resolutions, pending and investigating (v[0], v[1]). */
static void by_open_resolution(metrics_out_t *o, const char *name, const double v[2])
{
    static const char *const resolutions[] = {"pending", "investigating"};
    for (int i = 0; i < 2; i++) {
        char labels[64] = "";
        (void)metrics_label(labels, sizeof labels, "resolution", resolutions[i]);
        metrics_sample(o, name, labels, v[i]);
    }
}

/* One sample of family name labelled with an action. */
static void action_sample(metrics_out_t *o, const char *name, const char *action, double v)
{
    char labels[320] = "";
    (void)metrics_label(labels, sizeof labels, "action", action);
    metrics_sample(o, name, labels, v);
}

void gauges_collect(metrics_out_t *o, void *arg)
{
    const gauges_t *job = arg;
    const gauges_values_t *g = &job->values;
    char labels[320];
    metrics_family(o, "warren_executions_backlog", "gauge",
                   "Executions in each non-final status (refreshed every 10 s)");
    for (int s = 0; s < EXEC_STATUS_COUNT; s++) {
        if (trans_is_terminal((exec_status_t)s))
            continue;
        labels[0] = '\0';
        (void)metrics_label(labels, sizeof labels, "status", trans_status_name((exec_status_t)s));
        metrics_sample(o, "warren_executions_backlog", labels, (double)g->backlog[s]);
    }
    metrics_family(o, "warren_workers_live", "gauge",
                   "Live workers: online with a fresh heartbeat");
    metrics_sample(o, "warren_workers_live", "", (double)g->live_workers);
    metrics_family(o, "warren_action_workers_live", "gauge",
                   "Live workers offering each action that a worker seen in the last 7 days "
                   "offered (at most 64 actions)");
    for (size_t i = 0; i < g->n_actions; i++)
        action_sample(o, "warren_action_workers_live", g->actions[i].action,
                      (double)g->actions[i].live);
    metrics_family(o, "warren_executions_waiting", "gauge",
                   "Requested executions held back, by reason: paused (their action is paused; "
                   "refreshed every 10 s)");
    metrics_sample(o, "warren_executions_waiting", "reason=\"paused\"", (double)g->waiting_paused);
    metrics_family(o, "warren_action_paused_seconds", "gauge",
                   "How long each paused action has been paused (at most 64 actions; refreshed "
                   "every 10 s)");
    for (size_t i = 0; i < g->n_paused; i++)
        action_sample(o, "warren_action_paused_seconds", g->paused[i].action, g->paused[i].age);
    metrics_family(o, "warren_dead_letter_queue_messages", "gauge",
                   "Messages ready in the dead-letter queue, not yet stored");
    metrics_sample(o, "warren_dead_letter_queue_messages", "", (double)g->dlq_messages);
    metrics_family(o, "warren_dead_letter_oldest_age_seconds", "gauge",
                   "How long the dead-letter queue has had unstored messages without a break "
                   "(0 when none; a lower bound, measured every 10 s)");
    metrics_sample(o, "warren_dead_letter_oldest_age_seconds", "", g->dlq_oldest_age);
    metrics_family(o, "warren_dead_letters_open", "gauge",
                   "Open investigation records (dead letters pending or investigating), by "
                   "resolution (refreshed every 10 s)");
    const double open[2] = {(double)g->dl_open[0], (double)g->dl_open[1]};
    by_open_resolution(o, "warren_dead_letters_open", open);
    metrics_family(o, "warren_dead_letters_open_oldest_age_seconds", "gauge",
                   "Age of the oldest open investigation record, by resolution (0 when none; "
                   "refreshed every 10 s)");
    by_open_resolution(o, "warren_dead_letters_open_oldest_age_seconds", g->dl_open_oldest_age);
    metrics_family(o, "warren_execution_transitions_total", "counter",
                   "Execution status changes since this executor started: the happy path's "
                   "steps this executor made, at once; every other change (whoever made it) "
                   "and creations (from=\"none\") about 10 s after");
    for (int f = 0; f <= EXEC_STATUS_COUNT; f++)
        for (int t = 0; t < EXEC_STATUS_COUNT; t++) {
            uint64_t n = g->transitions[f][t] +
                         (f < EXEC_STATUS_COUNT ? job->stats->happy[f][t] : 0);
            if (!n)
                continue;
            labels[0] = '\0';
            (void)metrics_label(labels, sizeof labels, "from",
                                f == EXEC_STATUS_COUNT ? "none"
                                                       : trans_status_name((exec_status_t)f));
            (void)metrics_label(labels, sizeof labels, "to", trans_status_name((exec_status_t)t));
            metrics_sample_u64(o, "warren_execution_transitions_total", labels, n);
        }
    metrics_family(o, "warren_gauges_refreshed_timestamp_seconds", "gauge",
                   "When the database gauges were last read (Unix time)");
    metrics_sample(o, "warren_gauges_refreshed_timestamp_seconds", "",
                   (double)g->refreshed_ms / 1000.0);
}
