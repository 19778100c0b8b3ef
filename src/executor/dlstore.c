/* dead_letters rows: filled from deliveries, inserted in one batched, deduplicated statement. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/dlstore.h"
#include "executor/pgtext.h"
#include "warren/db.h"
#include "warren/utf8.h"

bool dlrec_reason_valid(const char *reason)
{
    size_t n = reason ? strlen(reason) : 0;
    if (n == 0 || n > 64 || reason[0] < 'a' || reason[0] > 'z')
        return false;
    return strspn(reason, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

void dlrec_from_delivery(dl_record_t *r, const mq_delivery_t *d, const xdeath_t *xd,
                         json_object *headers, const char *consumed_from)
{
    memset(r, 0, sizeof *r);
    r->consumed_from = consumed_from;
    r->body = d->body;
    r->body_len = d->body_len;
    r->body_cut = d->oversized;
    r->headers = headers;
    r->routing_key = d->routing_key;
    r->message_id = d->message_id;
    r->message_type = d->type;
    r->dedup_id = d->message_id && *d->message_id ? d->message_id : NULL;
    if (xd && xd->present) {
        /* The dead letter's origin: where it sat and which exchange first routed it. */
        r->exchange = xd->exchange[0] ? xd->exchange : d->exchange;
        r->queue = xd->queue;
        snprintf(r->dedup_suffix, sizeof r->dedup_suffix, "/%s/%s/%" PRId64 "/%" PRId64, xd->queue,
                 xd->reason, xd->count, xd->time_s);
    } else {
        r->exchange = d->exchange;
        r->queue = consumed_from;
        snprintf(r->dedup_suffix, sizeof r->dedup_suffix, "/%s", consumed_from);
    }
    size_t n = strlen(r->dedup_suffix);
    if (d->oversized) /* the hash covers the prefix only: the size tells more bodies apart */
        snprintf(r->dedup_suffix + n, sizeof r->dedup_suffix - n, "/%" PRIu64, d->body_size);
}

void dlrec_raw(dl_record_t *r, const mq_delivery_t *d, const char *queue)
{
    dlrec_from_delivery(r, d, NULL, NULL, queue);
    snprintf(r->dedup_suffix, sizeof r->dedup_suffix, "/%s/store_error", queue);
    r->reason = "store_error";
    r->error = "the database refused this message's record; stored raw without headers";
}

void dlrec_from_envelope(dl_record_t *r, const envelope_t *env)
{
    if (!env)
        return;
    if (!r->message_id && env->message_id[0])
        r->message_id = r->dedup_id = env->message_id;
    if (!r->message_type && env->type_name[0])
        r->message_type = env->type_name;
}

/* Arrays of the INSERT, one element per record, in column order below. */
enum {
    A_DEDUP_ID,
    A_DEDUP_SUFFIX,
    A_EXECUTION_ID,
    A_REASON,
    A_ROUTING_KEY,
    A_EXCHANGE,
    A_QUEUE,
    A_MESSAGE_ID,
    A_MESSAGE_TYPE,
    A_HEADERS,
    A_BODY,
    A_BODY_TEXT,
    A_ERROR,
    A_SNAPSHOT,
    A_X_DEATH_VERIFIED,
    A_COUNT,
    A_FOLD_KEY = A_COUNT, /* the folding insert's two more */
    A_OCCURRENCES,
    A_FOLD_COUNT
};

static const char insert_sql[] =
    "INSERT INTO dead_letters (dedup_key, execution_id, reason, routing_key, exchange, queue,"
    " message_id, message_type, headers, body, body_text, error, snapshot, x_death_verified) "
    "SELECT coalesce(u.dedup_id, 'sha256:' || encode(sha256(u.body), 'hex')) || u.dedup_suffix,"
    " u.execution_id, u.reason, u.routing_key, u.exchange, u.queue, u.message_id,"
    " u.message_type, u.headers::jsonb, u.body, u.body_text, u.error, u.snapshot::jsonb,"
    " u.x_death_verified "
    "FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],"
    " $7::text[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::text[], $13::text[],"
    " $14::text[], $15::boolean[]) WITH ORDINALITY AS u(dedup_id, dedup_suffix, execution_id,"
    " reason, routing_key, exchange, queue, message_id, message_type, headers, body, body_text,"
    " error, snapshot, x_death_verified, ord) "
    "ORDER BY u.ord "
    "ON CONFLICT (dedup_key) DO NOTHING RETURNING reason";

/* clang-format off */
/* One open record per fold key: a new one takes the batch's first message as its sample (its
 * dedup key made unique: the fold, not the key, is what keeps it single), an open one only
 * counts. Closed records are never folded into: a new flood after a resolve opens a new one. */
static const char fold_sql[] =
    "INSERT INTO dead_letters AS d (dedup_key, execution_id, reason, routing_key, exchange, queue,"
    " message_id, message_type, headers, body, body_text, error, snapshot, x_death_verified,"
    " fold_key, occurrences, last_seen_at) "
    "SELECT coalesce(u.dedup_id, 'sha256:' || encode(sha256(u.body), 'hex')) || u.dedup_suffix"
    " || '/fold/' || gen_random_uuid(),"
    " u.execution_id, u.reason, u.routing_key, u.exchange, u.queue, u.message_id,"
    " u.message_type, u.headers::jsonb, u.body, u.body_text, u.error, u.snapshot::jsonb,"
    " u.x_death_verified, u.fold_key, u.occurrences, now() "
    "FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],"
    " $7::text[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::text[], $13::text[],"
    " $14::text[], $15::boolean[], $16::text[], $17::bigint[]) WITH ORDINALITY AS u(dedup_id,"
    " dedup_suffix, execution_id, reason, routing_key, exchange, queue, message_id, message_type,"
    " headers, body, body_text, error, snapshot, x_death_verified, fold_key, occurrences, ord) "
    "ORDER BY u.ord "
    "ON CONFLICT (fold_key) WHERE fold_key IS NOT NULL"
    "   AND resolution IN ('pending', 'investigating')"
    " DO UPDATE SET occurrences = d.occurrences + EXCLUDED.occurrences, last_seen_at = now()"
    " RETURNING d.fold_key, (d.xmax = 0)::int";
/* clang-format on */

/* Add optional text, cleaned for PostgreSQL. */
static void add_text(pgarr_t *a, const char *s)
{
    if (!s) {
        pgarr_add(a, NULL);
        return;
    }
    char *clean = utf8_clean(s, strlen(s));
    if (!clean) {
        a->oom = true;
        return;
    }
    pgarr_add(a, clean);
    free(clean);
}

static void add_body(pgarr_t *body, pgarr_t *text, const dl_record_t *r)
{
    char *hex = pgtext_bytea_hex(r->body ? r->body : "", r->body_len);
    if (!hex) {
        body->oom = true;
        return;
    }
    pgarr_add(body, hex);
    free(hex);
    /* A prefix may end inside a character: the text is the whole characters before it. */
    size_t n = r->body_cut ? r->body_len - utf8_partial_tail(r->body, r->body_len) : r->body_len;
    if (r->body && utf8_is_text(r->body, n)) {
        char *copy = strndup(r->body, n);
        if (!copy)
            text->oom = true;
        else
            pgarr_add(text, copy);
        free(copy);
    } else {
        pgarr_add(text, NULL);
    }
}

static void add_record(pgarr_t *a, const dl_record_t *r)
{
    add_text(&a[A_DEDUP_ID], r->dedup_id);
    add_text(&a[A_DEDUP_SUFFIX], r->dedup_suffix);
    pgarr_add_int_or_null(&a[A_EXECUTION_ID], r->has_execution_id, r->execution_id);
    pgarr_add(&a[A_REASON], dlrec_reason_valid(r->reason) ? r->reason : "unknown");
    add_text(&a[A_ROUTING_KEY], r->routing_key);
    add_text(&a[A_EXCHANGE], r->exchange);
    add_text(&a[A_QUEUE], r->queue);
    add_text(&a[A_MESSAGE_ID], r->message_id);
    add_text(&a[A_MESSAGE_TYPE], r->message_type);
    /* json-c escapes control characters and the strings in it are already clean. */
    pgarr_add(&a[A_HEADERS],
              r->headers ? json_object_to_json_string_ext(r->headers, JSON_C_TO_STRING_PLAIN)
                         : "{}");
    add_body(&a[A_BODY], &a[A_BODY_TEXT], r);
    add_text(&a[A_ERROR], r->error);
    pgarr_add(&a[A_SNAPSHOT], r->snapshot);
    pgarr_add(&a[A_X_DEATH_VERIFIED], r->x_death_verified);
}

/* Messages nobody could read: what warren_poison_stored_total counts. */
static bool poison_reason(const char *reason)
{
    static const char *const poison[] = {"parse_error", "unknown_type", "missing_execution_id",
                                         "store_error"};
    for (size_t i = 0; i < sizeof poison / sizeof poison[0]; i++)
        if (!strcmp(reason, poison[i]))
            return true;
    return false;
}

static void count_inserted(PGresult *res, size_t n, executor_stats_t *stats)
{
    int rows = PQntuples(res);
    for (int i = 0; i < rows; i++) {
        stats_dead_letter(stats, PQgetvalue(res, i, 0), 1);
        stats->poison_stored += poison_reason(PQgetvalue(res, i, 0));
    }
    stats->dead_letter_duplicates += n - (size_t)rows;
}

bool dlrec_folds(const char *reason)
{
    /* Not oversized: each costs its sender more than max_body_bytes on the wire, so the network
     * bounds such a flood, and each record keeps where that body came from. */
    static const char *const folding[] = {
        "parse_error",    "unknown_type",           "missing_execution_id", "execution_missing",
        "not_dispatched", "superseded_incarnation", "forged_identity",      "bad_signature"};
    for (size_t i = 0; reason && i < sizeof folding / sizeof folding[0]; i++)
        if (!strcmp(reason, folding[i]))
            return true;
    return false;
}

/* The shape of an error: quoted text left out and each run of digits one '#', so "execution
 * 12 does not exist" and "execution 13 does not exist" are one shape, and a sender cannot make
 * a shape per message with what it quotes (writers quote every name a message brings). */
static void error_shape(const char *error, char *out, size_t len)
{
    size_t o = 0;
    bool quoted = false;
    for (const char *p = error ? error : ""; *p && o + 1 < len; p++) {
        if (*p == '\'') {
            quoted = !quoted;
            out[o++] = quoted ? '\'' : '*';
        } else if (quoted) {
            continue;
        } else if (*p >= '0' && *p <= '9') {
            if (o == 0 || out[o - 1] != '#')
                out[o++] = '#';
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/* "queue/reason/error shape", what a folding record stands for; false when the record does not
 * fold. The queue is the one consumed from, never a header's claim (a forged x-death names
 * any). */
static bool fold_key(const dl_record_t *r, char *key, size_t len)
{
    if (!dlrec_folds(r->reason) || !r->consumed_from)
        return false;
    char shape[160];
    error_shape(r->error, shape, sizeof shape);
    snprintf(key, len, "%s/%s/%s", r->consumed_from, r->reason, shape);
    return true;
}

/* Which records stand for which, worked out once per batch. */
typedef struct fold_plan {
    int64_t *occ; /* borrowed: 1 a record of its own, k the first of k folded, 0 the others */
    bool *folds;  /* owned: the record's reason folds */
    char **keys;  /* owned: the fold key of each first record of a key; NULL for the rest */
    size_t *leaders, nl; /* owned: the first records of each key, in order */
} fold_plan_t;

static void plan_free(fold_plan_t *p)
{
    for (size_t l = 0; p->keys && l < p->nl; l++)
        free(p->keys[p->leaders[l]]);
    free(p->keys);
    free(p->folds);
    free(p->leaders);
}

/*
 * Fill the plan for n records, each key computed once. A batch has a handful of fold keys (one
 * queue, eight reasons, the few ways each can go wrong), so the search over the leaders found
 * so far stays short. -1: out of memory.
 */
static int plan_folds(fold_plan_t *p, const dl_record_t *recs, size_t n, int64_t *occ)
{
    *p = (fold_plan_t){.occ = occ,
                       .folds = calloc(n + 1, sizeof *p->folds),
                       .keys = calloc(n + 1, sizeof *p->keys),
                       .leaders = calloc(n + 1, sizeof *p->leaders)};
    if (!p->folds || !p->keys || !p->leaders)
        return -1;
    char key[600];
    for (size_t i = 0; i < n; i++) {
        occ[i] = 1;
        p->folds[i] = fold_key(&recs[i], key, sizeof key);
        if (!p->folds[i])
            continue;
        size_t l = 0;
        while (l < p->nl && strcmp(key, p->keys[p->leaders[l]]))
            l++;
        if (l < p->nl) {
            occ[p->leaders[l]]++;
            occ[i] = 0;
        } else if (!(p->keys[i] = strdup(key))) {
            return -1;
        } else {
            p->leaders[p->nl++] = i;
        }
    }
    return 0;
}

/* The arrays of the records that do not fold (fold false) or of the fold leaders, with their
 * keys and counts (fold true), into a; how many records went in. */
static size_t build_arrays(pgarr_t *a, const dl_record_t *recs, size_t n, const fold_plan_t *p,
                           bool fold)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p->folds[i] != fold || p->occ[i] == 0)
            continue;
        add_record(a, &recs[i]);
        if (fold) {
            add_text(&a[A_FOLD_KEY], p->keys[i]);
            pgarr_add_int(&a[A_OCCURRENCES], p->occ[i]);
        }
        k++;
    }
    return k;
}

/* The folding insert's answer (fold key, inserted) counted: every message by its reason, and
 * those that joined an open record as folded. */
static void count_folded(PGresult *res, const dl_record_t *recs, const fold_plan_t *p,
                         executor_stats_t *stats)
{
    for (int r = 0; r < PQntuples(res); r++)
        for (size_t l = 0; l < p->nl; l++) {
            size_t i = p->leaders[l];
            if (strcmp(p->keys[i], PQgetvalue(res, r, 0)))
                continue;
            uint64_t n = (uint64_t)p->occ[i];
            stats_dead_letter(stats, recs[i].reason, n);
            stats->poison_stored += poison_reason(recs[i].reason) ? n : 0;
            stats->dead_letters_folded += n - (atoi(PQgetvalue(res, r, 1)) == 1 ? 1 : 0);
            break;
        }
}

/* One statement for the records that do not fold (fold false), or for the fold leaders. */
static int insert_part(PGconn *db, const dl_record_t *recs, size_t n, const fold_plan_t *p,
                       bool fold, executor_stats_t *stats, char *err, size_t errlen)
{
    pgarr_t a[A_FOLD_COUNT];
    int narrays = fold ? A_FOLD_COUNT : A_COUNT;
    for (int i = 0; i < A_FOLD_COUNT; i++)
        pgarr_init(&a[i]);
    size_t k = build_arrays(a, recs, n, p, fold);
    const char *params[A_FOLD_COUNT];
    int rc = 0;
    for (int i = 0; i < narrays; i++)
        if (!(params[i] = pgarr_text(&a[i])))
            rc = -1;
    PGresult *res = NULL;
    if (rc != 0)
        snprintf(err, errlen, "out of memory building %zu dead letters", k);
    else if (k > 0)
        rc = db_exec(db, fold ? fold_sql : insert_sql, narrays, params, &res, err, errlen);
    if (rc == 0 && k > 0 && !fold)
        count_inserted(res, k, stats);
    else if (rc == 0 && k > 0)
        count_folded(res, recs, p, stats);
    PQclear(res);
    for (int i = 0; i < A_FOLD_COUNT; i++)
        pgarr_free(&a[i]);
    return rc;
}

int dlstore_insert_folding(PGconn *db, const dl_record_t *recs, size_t n, int64_t *occurrences,
                           executor_stats_t *stats, char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    fold_plan_t p;
    int rc = plan_folds(&p, recs, n, occurrences);
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = insert_part(db, recs, n, &p, false, stats, err, errlen);
    if (rc == 0)
        rc = insert_part(db, recs, n, &p, true, stats, err, errlen);
    plan_free(&p);
    return rc;
}

int dlstore_insert(PGconn *db, const dl_record_t *recs, size_t n, executor_stats_t *stats,
                   char *err, size_t errlen)
{
    int64_t *occ = calloc(n + 1, sizeof *occ);
    if (!occ) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = dlstore_insert_folding(db, recs, n, occ, stats, err, errlen);
    free(occ);
    return rc;
}

static inmsg_t *nth(void *first, size_t i, size_t stride)
{
    return (inmsg_t *)(void *)((char *)first + i * stride);
}

int dlstore_unusable(PGconn *db, void *first, size_t n, size_t stride, const char *queue,
                     executor_stats_t *stats, char *err, size_t errlen)
{
    dl_record_t *recs = calloc(n + 1, sizeof *recs);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
    json_object **headers = calloc(n + 1, sizeof *headers);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized by its element */
    inmsg_t **of = calloc(n + 1, sizeof *of);
    int64_t *occ = calloc(n + 1, sizeof *occ);
    size_t k = 0;
    int rc = -1;
    if (recs && headers && of && occ) {
        for (size_t i = 0; i < n; i++) {
            inmsg_t *m = nth(first, i, stride);
            if (!m->reason[0])
                continue;
            /* The headers of a message whose record folds into an earlier one's are never
             * stored: only a sample's are converted. */
            dlrec_from_delivery(&recs[k], m->d, NULL, NULL, queue);
            dlrec_from_envelope(&recs[k], m->env_ok ? &m->env : NULL);
            recs[k].reason = m->reason;
            recs[k].error = m->error;
            recs[k].has_execution_id = m->has_execution_id;
            recs[k].execution_id = m->execution_id;
            of[k++] = m;
        }
        /* Only the records that are stored keep headers: not those folded into another's. */
        fold_plan_t p;
        if (plan_folds(&p, recs, k, occ) == 0)
            for (size_t i = 0; i < k; i++)
                if (occ[i] > 0)
                    recs[i].headers = headers[i] = hdr_to_json(&of[i]->d->headers);
        plan_free(&p);
        rc = dlstore_insert_folding(db, recs, k, occ, stats, err, errlen);
        for (size_t i = 0; rc == 0 && i < k; i++)
            of[i]->occurrences = occ[i];
    } else {
        snprintf(err, errlen, "out of memory");
    }
    for (size_t i = 0; headers && i < k; i++)
        json_object_put(headers[i]);
    free(headers);
    free(recs);
    free(of);
    free(occ);
    return rc;
}
