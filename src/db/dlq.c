/* Dead letters as a workflow: the words, the filter and the statements the API and the CLI
 * share (see warren/dlq.h), and the redrive of one record. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/action_timeouts.h"
#include "warren/db.h"
#include "warren/dlq.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/timestamp.h"
#include "warren/utf8.h"

#define FILTER_TEXT_MAX 255

const char *const dlq_reasons[] = {"worker_unavailable",
                                   "timeout",
                                   "abandoned",
                                   "max_retries_exceeded",
                                   "staleness_timeout",
                                   "poison_message",
                                   "unprocessable_result",
                                   "manual",
                                   NULL};
const char *const dlq_resolutions[] = {"pending",           "investigating", "manually_resolved",
                                       "permanent_failure", "cancelled",     NULL};

bool dlq_word_known(const char *const *words, const char *w)
{
    for (size_t i = 0; w && words[i]; i++)
        if (!strcmp(words[i], w))
            return true;
    return false;
}

/* "a, b, c" of a word list, for errors. */
static void word_list(const char *const *words, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; words[i] && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", words[i]);
}

/* A word member that must be one of words; copied into out. -1 with err. */
static int filter_word(json_object *in, json_object *out, const char *key, const char *const *words,
                       char *err, size_t errlen)
{
    const char *v = NULL;
    jf_t f = {in, NULL, err, errlen};
    int rc = jf_string(&f, key, false, 64, &v);
    if (rc <= 0)
        return rc;
    if (!dlq_word_known(words, v)) {
        char known[256];
        word_list(words, known, sizeof known);
        snprintf(err, errlen, "%s: unknown value '%.*s' (known: %s)", key, utf8_prec(v, 64), v,
                 known);
        return -1;
    }
    json_object_object_add(out, key, json_object_new_string(v));
    return 0;
}

static int filter_string(json_object *in, json_object *out, const char *key, char *err,
                         size_t errlen)
{
    const char *v = NULL;
    jf_t f = {in, NULL, err, errlen};
    int rc = jf_string(&f, key, false, FILTER_TEXT_MAX, &v);
    if (rc <= 0)
        return rc;
    if (!*v) {
        snprintf(err, errlen, "%s: empty", key);
        return -1;
    }
    json_object_object_add(out, key, json_object_new_string(v));
    return 0;
}

static int filter_time(json_object *in, json_object *out, const char *key, char *err, size_t errlen)
{
    const char *v = NULL;
    jf_t f = {in, NULL, err, errlen};
    int rc = jf_string(&f, key, false, 64, &v);
    int64_t us;
    if (rc <= 0)
        return rc;
    if (ts_parse(v, &us) != 0) {
        snprintf(err, errlen, "%s: an RFC 3339 date-time, e.g. 2024-05-01T00:00:00Z", key);
        return -1;
    }
    char text[TS_TEXT_MAX];
    ts_format_us(us, text, sizeof text);
    json_object_object_add(out, key, json_object_new_string(text));
    return 0;
}

static int filter_ids(json_object *in, json_object *out, char *err, size_t errlen)
{
    json_object *ids;
    jf_t f = {in, NULL, err, errlen};
    int rc = jf_array(&f, "ids", false, SIZE_MAX, &ids);
    if (rc <= 0)
        return rc;
    size_t n = json_object_array_length(ids);
    if (n == 0 || n > DLQ_IDS_MAX) {
        snprintf(err, errlen, "ids: 1 to %d record ids, not %zu", DLQ_IDS_MAX, n);
        return -1;
    }
    json_object *copy = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(ids, i);
        int64_t id = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
        if (id < 1) {
            snprintf(err, errlen, "ids[%zu]: a record id (a positive integer)", i);
            json_object_put(copy);
            return -1;
        }
        json_object_array_add(copy, json_object_new_int64(id));
    }
    json_object_object_add(out, "ids", copy);
    return 0;
}

json_object *dlq_filter(json_object *in, bool allow_ids, char *err, size_t errlen)
{
    static const char *const known[] = {"resolution", "reason", "queue", "action", "execution_id",
                                        "since",      "until",  "q",     "ids",    NULL};
    if (in && !json_object_is_type(in, json_type_object)) {
        snprintf(err, errlen, "a filter is a JSON object, not %s", jf_kind(in));
        return NULL;
    }
    json_object *out = json_object_new_object();
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!in) /* no filter: no condition (json_object_object_foreach needs an object) */
        return out;
    json_object_object_foreach(in, key, val) {
        (void)val;
        if (!dlq_word_known(known, key) || (!allow_ids && !strcmp(key, "ids"))) {
            snprintf(err, errlen,
                     "unknown filter '%.*s' (known: resolution, reason, queue, action, "
                     "execution_id, since, until, q%s)",
                     utf8_prec(key, 64), key, allow_ids ? ", ids" : "");
            json_object_put(out);
            return NULL;
        }
    }
    jf_t f = {in, NULL, err, errlen};
    int64_t id = 0;
    int rc = 0;
    if (filter_word(in, out, "resolution", dlq_resolutions, err, errlen) < 0 ||
        filter_word(in, out, "reason", dlq_reasons, err, errlen) < 0 ||
        filter_string(in, out, "queue", err, errlen) < 0 ||
        filter_string(in, out, "action", err, errlen) < 0 ||
        filter_string(in, out, "q", err, errlen) < 0 ||
        filter_time(in, out, "since", err, errlen) < 0 ||
        filter_time(in, out, "until", err, errlen) < 0 ||
        (rc = jf_execution_id(&f, false, &id)) < 0 || filter_ids(in, out, err, errlen) < 0) {
        json_object_put(out);
        return NULL;
    }
    if (rc == 1)
        json_object_object_add(out, "execution_id", json_object_new_int64(id));
    return out;
}

bool dlq_resolution_closed(const char *resolution)
{
    return dlq_word_known(dlq_resolutions, resolution) && strcmp(resolution, "pending") &&
           strcmp(resolution, "investigating");
}

void dlq_resolve_note(char *buf, size_t len, const char *by, const char *notes)
{
    snprintf(buf, len, "resolved in bulk by %s%s%s", by, notes ? ": " : "", notes ? notes : "");
}

int dlq_patch_check(json_object *in, char *err, size_t errlen)
{
    if (!json_object_is_type(in, json_type_object)) {
        snprintf(err, errlen, "the body is a JSON object, not %s", jf_kind(in));
        return -1;
    }
    size_t n = 0;
    json_object_object_foreach(in, key, val) {
        if (!strcmp(key, "resolution")) {
            const char *v = json_object_is_type(val, json_type_string) ? json_object_get_string(val)
                                                                       : NULL;
            if (!dlq_word_known(dlq_resolutions, v)) {
                char known[256];
                word_list(dlq_resolutions, known, sizeof known);
                snprintf(err, errlen, "resolution: one of %s", known);
                return -1;
            }
        } else if (!strcmp(key, "notes")) {
            if (val && (!json_object_is_type(val, json_type_string) ||
                        json_object_get_string_len(val) > 10000)) {
                snprintf(err, errlen, "notes: text of at most 10000 bytes, or null");
                return -1;
            }
        } else if (!strcmp(key, "metadata")) {
            if (!json_object_is_type(val, json_type_object)) {
                snprintf(err, errlen, "metadata: a JSON object, not %s", jf_kind(val));
                return -1;
            }
        } else {
            snprintf(err, errlen, "unknown field '%.*s' (known: resolution, notes, metadata)",
                     utf8_prec(key, 64), key);
            return -1;
        }
        n++;
    }
    if (n == 0) {
        snprintf(err, errlen, "nothing to change: give resolution, notes or metadata");
        return -1;
    }
    return 0;
}

/* clang-format off */
const char q_dl_list[] =
    "SELECT coalesce(jsonb_agg(p.item ORDER BY p.id DESC), '[]')::text AS doc,"
    " min(p.id) AS last_id, count(*) AS n FROM (SELECT d.id, warren_dl_item(d) AS item"
    " FROM dead_letters d WHERE warren_dl_match(d, $1::jsonb)"
    " ORDER BY d.id DESC LIMIT $2::integer) p";

/* Every page of one walk ranks the records at its first page's as_of, so that records that
 * age at different rates keep their order from page to page; records that came later wait for
 * the next walk. */
const char q_dl_queue[] =
    "WITH p AS (SELECT coalesce(timestamptz 'epoch' + $1::bigint * interval '1 microsecond',"
    "   now()) AS as_of),"
    " q AS (SELECT d.id, warren_dl_priority(d.investigation_reason, d.received_at, p.as_of) AS pr"
    "   FROM dead_letters d, p WHERE d.resolution IN ('pending', 'investigating')"
    "   AND d.investigation_reason IS NOT NULL AND d.received_at <= p.as_of),"
    " page AS (SELECT q.id, q.pr FROM q WHERE $2::numeric IS NULL OR q.pr < $2::numeric"
    "   OR (q.pr = $2::numeric AND q.id > $3::bigint) ORDER BY q.pr DESC, q.id LIMIT $4::int),"
    " last AS (SELECT page.pr, page.id FROM page ORDER BY page.pr, page.id DESC LIMIT 1) "
    "SELECT coalesce(jsonb_agg(warren_dl_item(d) || jsonb_build_object('priority', page.pr)"
    "   ORDER BY page.pr DESC, page.id), '[]')::text AS doc, count(*) AS n,"
    " (SELECT '" DLQ_QUEUE_CURSOR_PREFIX "' || (extract(epoch FROM p.as_of) * 1000000)::bigint"
    "   || '_' || last.pr || '_' || last.id FROM p, last) AS next"
    " FROM page JOIN dead_letters d ON d.id = page.id";
const char q_dl_show[] = "SELECT warren_dl_doc(d)::text AS doc FROM dead_letters d WHERE d.id = $1";

/* Stats of a filter on reason, queue and resolution alone (or none) add up the tallies of
 * schema 027, whatever the number of records; the oldest pending record is the first entry of
 * dead_letters_resolution_idx. Any other filter counts the matching records (m), through the
 * indexes its members have. Planned for the filter's value (see warren/dlq.h), the CASE keeps
 * one branch and warren_dl_match keeps the conditions the filter asks for. */
#define DL_TALLY(col) \
    "(SELECT coalesce(jsonb_object_agg(k, n), '{}') FROM (SELECT coalesce(" col ", 'none') AS k," \
    " sum(n)::bigint AS n FROM t GROUP BY 1) g)"
#define DL_GROUP(col) \
    "(SELECT coalesce(jsonb_object_agg(k, n), '{}') FROM (SELECT coalesce(" col ", 'none') AS k," \
    " count(*) AS n FROM m GROUP BY 1) g)"
#define DL_FILTER_IS(key, col) \
    "($1::jsonb ->> '" key "' IS NULL OR " col " = $1::jsonb ->> '" key "')"
const char q_dl_stats[] =
    "SELECT (CASE WHEN ($1::jsonb - '{reason,queue,resolution}'::text[]) = '{}'::jsonb THEN ("
    " WITH t AS (SELECT investigation_reason AS reason, queue, resolution, sum(n) AS n,"
    "   sum(resolved_n) AS resolved_n, sum(resolved_s) AS resolved_s FROM dead_letter_tallies"
    "   WHERE " DL_FILTER_IS("reason", "investigation_reason")
    "   AND " DL_FILTER_IS("queue", "queue")
    "   AND " DL_FILTER_IS("resolution", "resolution")
    "   GROUP BY 1, 2, 3 HAVING sum(n) <> 0)"
    " SELECT jsonb_build_object('total', (SELECT coalesce(sum(n), 0)::bigint FROM t),"
    " 'by_reason', " DL_TALLY("reason") ","
    " 'by_queue', " DL_TALLY("queue") ","
    " 'by_resolution', " DL_TALLY("resolution") ","
    " 'oldest_pending_age_s', (SELECT"
    "   round(extract(epoch FROM now() - min(received_at))::numeric, 3)"
    "   FROM dead_letters d WHERE d.resolution = 'pending' AND warren_dl_match(d, $1::jsonb)),"
    " 'mean_time_to_resolve_s', (SELECT round(sum(resolved_s) / nullif(sum(resolved_n), 0), 3)"
    "   FROM t))"
    ") ELSE ("
    " WITH m AS (SELECT d.investigation_reason, d.queue, d.resolution, d.received_at,"
    "   d.resolved_at"
    "   FROM dead_letters d WHERE warren_dl_match(d, $1::jsonb))"
    " SELECT jsonb_build_object('total', (SELECT count(*) FROM m),"
    " 'by_reason', " DL_GROUP("investigation_reason") ","
    " 'by_queue', " DL_GROUP("queue") ","
    " 'by_resolution', " DL_GROUP("resolution") ","
    " 'oldest_pending_age_s', (SELECT"
    "   round(extract(epoch FROM now() - min(received_at))::numeric, 3)"
    "   FROM m WHERE resolution = 'pending'),"
    " 'mean_time_to_resolve_s', (SELECT"
    "   round(avg(extract(epoch FROM resolved_at - received_at))::numeric, 3)"
    "   FROM m WHERE resolved_at IS NOT NULL AND investigation_reason IS NOT NULL)))"
    " END)::text AS doc";

const char q_dl_patch[] =
    "UPDATE dead_letters d SET"
    " resolution = coalesce($2::jsonb ->> 'resolution', d.resolution),"
    " notes = CASE WHEN $2::jsonb ? 'notes' THEN $2::jsonb ->> 'notes' ELSE d.notes END,"
    " metadata = CASE WHEN $2::jsonb ? 'metadata' THEN d.metadata || ($2::jsonb -> 'metadata')"
    "   ELSE d.metadata END,"
    " resolved_by = CASE WHEN NOT $2::jsonb ? 'resolution' THEN d.resolved_by"
    "   WHEN $2::jsonb ->> 'resolution' = 'pending' THEN NULL ELSE $3 END,"
    " resolved_at = CASE WHEN coalesce($2::jsonb ->> 'resolution', d.resolution)"
    "   IN ('pending', 'investigating') THEN NULL ELSE d.resolved_at END"
    " WHERE d.id = $1 RETURNING warren_dl_doc(d)::text AS doc";

const char q_dl_purge[] =
    "WITH m AS (SELECT d.id FROM dead_letters d WHERE warren_dl_match(d, $1::jsonb)"
    "   AND d.resolution NOT IN ('pending', 'investigating') FOR UPDATE),"
    " c AS (SELECT count(*) AS n FROM m),"
    " del AS (DELETE FROM dead_letters d USING m, c WHERE d.id = m.id"
    "   AND c.n = $2::bigint RETURNING d.id) "
    "SELECT (SELECT n FROM c) AS matched, (SELECT count(*) FROM del) AS deleted";

const char q_dl_resolve[] =
    "WITH m AS (SELECT d.id FROM dead_letters d WHERE warren_dl_match(d, $1::jsonb)"
    "   AND d.resolution IN ('pending', 'investigating') ORDER BY d.id FOR UPDATE),"
    " c AS (SELECT count(*) AS n FROM m),"
    " upd AS (UPDATE dead_letters d SET resolution = $3::text, resolved_by = $4::text,"
    "   notes = concat_ws(E'\\n', d.notes, $5::text)"
    "   FROM m, c WHERE d.id = m.id AND c.n = $2::bigint RETURNING d.id) "
    "SELECT (SELECT n FROM c) AS matched, (SELECT count(*) FROM upd) AS resolved";

static const char lock_record_sql[] =
    "SELECT d.execution_id, d.resolution, d.redriven_at IS NOT NULL, d.redrive_attempt,"
    " coalesce((d.investigation -> 'execution' ->> 'attempt')::int,"
    "   (d.snapshot ->> 'attempt')::int, -1),"
    " (SELECT e.redrive_count FROM executions e WHERE e.id = d.execution_id)"
    " FROM dead_letters d WHERE d.id = $1 FOR UPDATE";

static const char resolve_record_sql[] =
    "UPDATE dead_letters d SET resolution = 'manually_resolved', resolved_by = $2::text,"
    " redriven_at = now(), redrive_attempt = $3::int,"
    " notes = concat_ws(E'\\n', d.notes, format('redriven by %s: attempt %s of execution %s',"
    "   $2::text, $3::int, d.execution_id))"
    " WHERE d.id = $1 RETURNING warren_dl_doc(d)::text";
/* clang-format on */

static char *show(PGconn *db, const char *id, char *err, size_t errlen)
{
    PGresult *res = NULL;
    const char *p[] = {id};
    char *doc = NULL;
    if (db_exec(db, q_dl_show, 1, p, &res, err, errlen) == 0 && PQntuples(res) == 1)
        doc = strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    return doc;
}

const char *dlq_redrive_word(dlq_redrive_result_t result)
{
    static const char *const words[] = {[DLQ_REDRIVEN] = "moved",
                                        [DLQ_NOT_FOUND] = "not_found",
                                        [DLQ_ALREADY] = "already_redriven",
                                        [DLQ_CLOSED] = "closed",
                                        [DLQ_NO_EXECUTION] = "no_execution",
                                        [DLQ_SKIPPED] = "moved_on",
                                        [DLQ_MAX_REDRIVES] = "max_redrives"};
    return (unsigned)result < sizeof words / sizeof words[0] ? words[result] : "unknown";
}

int dlq_redrive(PGconn *db, int64_t id, const char *worker, bool unpin, int max_redrives,
                const char *by, dlq_redrive_result_t *result, char **doc, char *why, size_t whylen,
                char *err, size_t errlen)
{
    char id_text[24];
    snprintf(id_text, sizeof id_text, "%" PRId64, id);
    *doc = NULL;
    why[0] = '\0';
    PGresult *res = NULL;
    const char *p[] = {id_text};
    if (db_exec(db, lock_record_sql, 1, p, &res, err, errlen) != 0)
        return -1;
    if (PQntuples(res) == 0) {
        PQclear(res);
        *result = DLQ_NOT_FOUND;
        snprintf(why, whylen, "no dead letter %s", id_text);
        return 0;
    }
    bool has_exec = !PQgetisnull(res, 0, 0);
    int64_t exec_id = has_exec ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
    char resolution[32];
    snprintf(resolution, sizeof resolution, "%s", PQgetvalue(res, 0, 1));
    bool redriven = PQgetvalue(res, 0, 2)[0] == 't';
    int attempt = atoi(PQgetvalue(res, 0, 4));
    int redrives = PQgetisnull(res, 0, 5) ? 0 : atoi(PQgetvalue(res, 0, 5));
    if (redriven) {
        *result = DLQ_ALREADY;
        snprintf(why, whylen, "dead letter %s was redriven already (attempt %s)", id_text,
                 PQgetvalue(res, 0, 3));
    } else if (strcmp(resolution, "pending") && strcmp(resolution, "investigating")) {
        *result = DLQ_CLOSED;
        snprintf(why, whylen, "dead letter %s is %s: only an open record is redriven", id_text,
                 resolution);
    } else if (!has_exec) {
        *result = DLQ_NO_EXECUTION;
        snprintf(why, whylen, "dead letter %s names no execution", id_text);
    } else if (max_redrives > 0 && redrives >= max_redrives) {
        *result = DLQ_MAX_REDRIVES;
        snprintf(why, whylen,
                 "execution %" PRId64 " was redriven %d times already: dead_letter.max_redrives "
                 "is %d",
                 exec_id, redrives, max_redrives);
    }
    PQclear(res);
    if (why[0]) {
        *doc = show(db, id_text, err, errlen);
        return 0;
    }
    char note[300], status[32];
    int new_attempt = 0;
    snprintf(note, sizeof note, "redrive of dead letter %s by %s", id_text, by);
    int done = reattempt(db, exec_id, attempt, worker, unpin, note, &new_attempt, status,
                         sizeof status, err, errlen);
    if (done < 0)
        return -1;
    if (done == 0) {
        *result = status[0] ? DLQ_SKIPPED : DLQ_NO_EXECUTION;
        if (status[0])
            snprintf(why, whylen,
                     "execution %" PRId64 " moved on (it is %s, or past attempt %d): skipped",
                     exec_id, status, attempt);
        else
            snprintf(why, whylen, "execution %" PRId64 " does not exist", exec_id);
        *doc = show(db, id_text, err, errlen);
        return 0;
    }
    char attempt_text[16];
    snprintf(attempt_text, sizeof attempt_text, "%d", new_attempt);
    const char *q[] = {id_text, by, attempt_text};
    if (db_exec(db, resolve_record_sql, 3, q, &res, err, errlen) != 0)
        return -1;
    *doc = strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    *result = DLQ_REDRIVEN;
    return 0;
}

/* ---- staleness ---- */

const char *const dlq_healths[] = {"healthy", "warning", "stale", NULL};

const char q_staleness[] =
    "SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.id), '[]')::text AS doc FROM ("
    " SELECT * FROM warren_staleness($1::jsonb) WHERE ($2::text IS NULL OR health = $2)"
    " ORDER BY id LIMIT $3::integer) s";

typedef struct by_action {
    json_object *actions;
    const char *status;
} by_action_t;

static void add_override(const char *action, size_t len, int seconds, void *arg)
{
    by_action_t *b = arg;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)len, action);
    json_object *a;
    if (!json_object_object_get_ex(b->actions, name, &a)) {
        a = json_object_new_object();
        json_object_object_add(b->actions, name, a);
    }
    json_object_object_add(a, b->status, json_object_new_int(seconds));
}

char *dlq_staleness_cfg(const warren_config_t *cfg)
{
    const typeof(cfg->staleness) *c = &cfg->staleness;
    json_object *doc = json_object_new_object(), *defaults = json_object_new_object();
    json_object *actions = json_object_new_object();
    json_object_object_add(defaults, "requested", json_object_new_int(c->requested_s));
    json_object_object_add(defaults, "scheduled", json_object_new_int(c->scheduled_s));
    json_object_object_add(defaults, "running", json_object_new_int(c->running_s));
    const char *specs[][2] = {{"requested", c->requested_by_action},
                              {"scheduled", c->scheduled_by_action},
                              {"running", c->running_by_action}};
    for (size_t i = 0; i < 3; i++) {
        by_action_t b = {actions, specs[i][0]};
        action_timeouts_each(specs[i][1], add_override, &b);
    }
    json_object_object_add(doc, "defaults", defaults);
    json_object_object_add(doc, "actions", actions);
    json_object_object_add(doc, "warning_pct", json_object_new_int(c->warning_pct));
    char *text = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
    json_object_put(doc);
    return text;
}

/* ---- bulk redrive tasks ---- */

const char *const dlq_task_statuses[] = {"running", "completed",     "cancelling", "cancelled",
                                         "failed",  "paused_canary", NULL};

const char *dlq_task_source(json_object *filter)
{
    json_object *q;
    return json_object_object_get_ex(filter, "queue", &q) && q ? json_object_get_string(q) : "*";
}

/* clang-format off */
const char q_rt_create[] =
    "INSERT INTO redrive_tasks (filter, source, rate, worker, unpin, to_move, max_id, status,"
    " created_by, canary_count, max_failure_ratio, canary_state)"
    " SELECT $1::jsonb, $2, $3::integer, $4, $5::boolean, c.n, c.max_id,"
    " CASE WHEN c.n = 0 THEN 'completed' ELSE 'running' END, $6, $7::integer, $8::float8,"
    " CASE WHEN $7::integer > 0 AND c.n > 0 THEN 'redriving' ELSE 'none' END"
    " FROM (SELECT count(*)::integer AS n, coalesce(max(d.id), 0) AS max_id FROM dead_letters d"
    "   WHERE warren_dl_match(d, $1::jsonb) AND warren_dl_redrivable(d)) c"
    " WHERE NOT EXISTS (SELECT 1 FROM redrive_tasks t WHERE t.source = $2"
    "   AND t.status IN ('running', 'cancelling', 'paused_canary'))"
    " RETURNING to_jsonb(redrive_tasks)::text AS doc";

const char q_rt_active[] =
    "SELECT id FROM redrive_tasks WHERE source = $1"
    " AND status IN ('running', 'cancelling', 'paused_canary')";

const char q_rt_get[] =
    "SELECT (to_jsonb(t) || jsonb_build_object("
    " 'skipped_by_reason', (SELECT coalesce(jsonb_object_agg(s.k, s.n), '{}') FROM"
    "   (SELECT skip_reason AS k, count(*) AS n FROM redrive_task_items"
    "    WHERE task_id = t.id AND result = 'skipped' GROUP BY 1) s),"
    " 'outcomes', (SELECT coalesce(jsonb_object_agg(s.k, s.n), '{}') FROM"
    "   (SELECT coalesce(outcome, 'pending') AS k, count(*) AS n FROM redrive_task_items"
    "    WHERE task_id = t.id AND result = 'moved' GROUP BY 1) s)))::text AS doc"
    " FROM redrive_tasks t WHERE t.id = $1";

const char q_rt_items[] =
    "SELECT (SELECT count(*) FROM redrive_tasks WHERE id = $1),"
    " coalesce(jsonb_agg(to_jsonb(i) - 'task_id' ORDER BY i.record_id), '[]')::text,"
    " max(i.record_id), count(*) FROM ("
    " SELECT * FROM redrive_task_items WHERE task_id = $1 AND record_id > $2::bigint"
    " AND ($3::text IS NULL OR result = $3) AND ($4::text IS NULL OR outcome = $4"
    "   OR ($4 = 'pending' AND result = 'moved' AND outcome IS NULL))"
    " ORDER BY record_id LIMIT $5::integer) i";

const char q_rt_list[] =
    "SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.id DESC), '[]')::text AS doc FROM ("
    " SELECT * FROM redrive_tasks WHERE ($1::text IS NULL OR status = $1)"
    " ORDER BY id DESC LIMIT $2::integer) t";

/* A running task becomes cancelling (the executor finishes it), a paused one cancelled. */
const char q_rt_cancel[] =
    "WITH t AS (SELECT id, status AS before FROM redrive_tasks WHERE id = $1 FOR UPDATE),"
    " u AS (UPDATE redrive_tasks r SET status = CASE WHEN t.before = 'paused_canary'"
    "   THEN 'cancelled' ELSE 'cancelling' END FROM t"
    "   WHERE r.id = t.id AND t.before IN ('running', 'paused_canary') RETURNING r.*) "
    "SELECT t.before, coalesce(to_jsonb(u), (SELECT to_jsonb(x) FROM redrive_tasks x"
    " WHERE x.id = t.id))::text AS doc FROM t LEFT JOIN u ON u.id = t.id";

const char q_rt_resume[] =
    "WITH t AS (SELECT id, status AS before FROM redrive_tasks WHERE id = $1 FOR UPDATE),"
    " u AS (UPDATE redrive_tasks r SET status = 'running', canary_state = 'resumed',"
    "   resumed_by = $2, resumed_at = now(), bucket_at = now() FROM t"
    "   WHERE r.id = t.id AND t.before = 'paused_canary' RETURNING r.*) "
    "SELECT t.before, coalesce(to_jsonb(u), (SELECT to_jsonb(x) FROM redrive_tasks x"
    " WHERE x.id = t.id))::text AS doc FROM t LEFT JOIN u ON u.id = t.id";
/* clang-format on */

/* Digits only, 1 to 18 of them (an int64). */
static bool digits(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 18 && strspn(s, "0123456789") == n;
}

int dlq_queue_cursor(const char *c, char *buf, size_t len, const char **as_of,
                     const char **priority, const char **id)
{
    size_t plen = strlen(DLQ_QUEUE_CURSOR_PREFIX);
    *as_of = *priority = *id = NULL;
    if (strncmp(c, DLQ_QUEUE_CURSOR_PREFIX, plen) || strlen(c + plen) >= len)
        return -1;
    snprintf(buf, len, "%s", c + plen);
    char *p = strchr(buf, '_'), *q = p ? strchr(p + 1, '_') : NULL;
    if (!p || !q)
        return -1;
    *p = *q = '\0';
    const char *pr = p + 1;
    bool ok = digits(buf) && digits(q + 1) && *pr && *pr != '.' && strlen(pr) <= 24 &&
              strspn(pr, "0123456789.") == strlen(pr) && strchr(pr, '.') == strrchr(pr, '.');
    if (ok) {
        *as_of = buf;
        *priority = pr;
        *id = q + 1;
    }
    return ok ? 0 : -1;
}

char *dlq_queue_page(PGresult *res, const char *limit)
{
    const char *doc = PQgetvalue(res, 0, 0);
    bool full = !strcmp(PQgetvalue(res, 0, 1), limit) && !PQgetisnull(res, 0, 2);
    size_t len = strlen(doc) + strlen(PQgetvalue(res, 0, 2)) + 48;
    char *body = malloc(len);
    if (body && full)
        snprintf(body, len, "{\"items\":%s,\"next_cursor\":\"%s\"}", doc, PQgetvalue(res, 0, 2));
    else if (body)
        snprintf(body, len, "{\"items\":%s,\"next_cursor\":null}", doc);
    return body;
}
