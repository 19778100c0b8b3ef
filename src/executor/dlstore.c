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
    A_COUNT
};

static const char insert_sql[] =
    "INSERT INTO dead_letters (dedup_key, execution_id, reason, routing_key, exchange, queue,"
    " message_id, message_type, headers, body, body_text, error, snapshot) "
    "SELECT coalesce(u.dedup_id, 'sha256:' || encode(sha256(u.body), 'hex')) || u.dedup_suffix,"
    " u.execution_id, u.reason, u.routing_key, u.exchange, u.queue, u.message_id,"
    " u.message_type, u.headers::jsonb, u.body, u.body_text, u.error, u.snapshot::jsonb "
    "FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],"
    " $7::text[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::text[], $13::text[],"
    " $14::text[]) WITH ORDINALITY AS u(dedup_id, dedup_suffix, execution_id, reason, routing_key,"
    " exchange, queue, message_id, message_type, headers, body, body_text, error, snapshot, ord) "
    "ORDER BY u.ord "
    "ON CONFLICT (dedup_key) DO NOTHING RETURNING reason";

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

int dlstore_insert(PGconn *db, const dl_record_t *recs, size_t n, executor_stats_t *stats,
                   char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    pgarr_t a[A_COUNT];
    for (int i = 0; i < A_COUNT; i++)
        pgarr_init(&a[i]);
    for (size_t i = 0; i < n; i++)
        add_record(a, &recs[i]);
    const char *params[A_COUNT];
    int rc = 0;
    for (int i = 0; i < A_COUNT; i++)
        if (!(params[i] = pgarr_text(&a[i])))
            rc = -1;
    PGresult *res = NULL;
    if (rc != 0)
        snprintf(err, errlen, "out of memory building %zu dead letters", n);
    else
        rc = db_exec(db, insert_sql, A_COUNT, params, &res, err, errlen);
    if (rc == 0)
        count_inserted(res, n, stats);
    PQclear(res);
    for (int i = 0; i < A_COUNT; i++)
        pgarr_free(&a[i]);
    return rc;
}

static const inmsg_t *nth(const void *first, size_t i, size_t stride)
{
    return (const inmsg_t *)(const void *)((const char *)first + i * stride);
}

int dlstore_unusable(PGconn *db, const void *first, size_t n, size_t stride, const char *queue,
                     executor_stats_t *stats, char *err, size_t errlen)
{
    dl_record_t *recs = calloc(n + 1, sizeof *recs);
    json_object **headers = calloc(n + 1, sizeof *headers);
    size_t k = 0;
    int rc = -1;
    if (recs && headers) {
        for (size_t i = 0; i < n; i++) {
            const inmsg_t *m = nth(first, i, stride);
            if (!m->reason[0])
                continue;
            headers[k] = hdr_to_json(&m->d->headers);
            dlrec_from_delivery(&recs[k], m->d, NULL, headers[k], queue);
            dlrec_from_envelope(&recs[k], m->env_ok ? &m->env : NULL);
            recs[k].reason = m->reason;
            recs[k].error = m->error;
            recs[k].has_execution_id = m->has_execution_id;
            recs[k].execution_id = m->execution_id;
            k++;
        }
        rc = dlstore_insert(db, recs, k, stats, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    for (size_t i = 0; headers && i < k; i++)
        json_object_put(headers[i]);
    free(headers);
    free(recs);
    return rc;
}
