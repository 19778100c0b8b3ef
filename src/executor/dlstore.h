/*
 * Writing dead_letters rows: one batched INSERT ... ON CONFLICT (dedup_key) DO NOTHING for any
 * number of records, shared by the dead-letter handler, the result and heartbeat consumers
 * (malformed messages) and the timeout monitor's SQL (same columns, same dedup rule).
 */
#ifndef WARREN_EXECUTOR_DLSTORE_H
#define WARREN_EXECUTOR_DLSTORE_H

#include <json-c/json.h>
#include <libpq-fe.h>
#include "executor/headers.h"
#include "executor/inmsg.h"
#include "executor/stats.h"
#include "warren/envelope.h"
#include "warren/mq.h"

/*
 * One row. Strings are copied and cleaned (valid UTF-8, no NUL) when inserted, so they may
 * come straight from a delivery. The dedup key is dedup_id (or "sha256:<hex of body>" when
 * NULL) followed by dedup_suffix, per docs/schema.md.
 */
typedef struct dl_record {
    const char *reason; /* a word matching ^[a-z][a-z0-9_]{0,63}$ */
    bool has_execution_id;
    int64_t execution_id;
    const char *routing_key, *exchange, *queue;
    const char *consumed_from; /* the queue the message was consumed from: poison folds by it */
    const char *message_id, *message_type;
    json_object *headers; /* borrowed; NULL: {} */
    const void *body;     /* the whole body, or its prefix when body_cut */
    size_t body_len;
    bool body_cut; /* oversized: body is the first bytes of a longer body (the error says so) */
    const char *error;
    const char *snapshot; /* JSON text of the execution row, or NULL */
    /* "t": the broker wrote the x-death that queue and reason come from; "f": a header nobody
     * vouches for, a claim; NULL: no x-death (docs/dead-letters.md) */
    const char *x_death_verified;
    const char *dedup_id;
    char dedup_suffix[400];
} dl_record_t;

/*
 * Fill the common fields from a delivery: body, headers, routing key, exchange and queue
 * (from x-death when present), message id and type (AMQP properties, else envelope_id/type
 * when given). The record borrows from d and headers (which the caller creates with
 * hdr_to_json and puts afterwards). reason is set by the caller.
 */
void dlrec_from_delivery(dl_record_t *r, const mq_delivery_t *d, const xdeath_t *xd,
                         json_object *headers, const char *consumed_from);

/* The last resort for a message whose record the database refused: the body and what the
 * delivery says, nothing derived from the content, reason store_error. */
void dlrec_raw(dl_record_t *r, const mq_delivery_t *d, const char *queue);

/* Take message id and type from the envelope when the AMQP properties had none. */
void dlrec_from_envelope(dl_record_t *r, const envelope_t *env);

/* True for a word fit for dead_letters.reason. */
bool dlrec_reason_valid(const char *reason);

/* True for a reason whose records fold (docs/dead-letters.md, "Floods"): a message nobody can
 * use, or a report of a dispatch the executor never sent. */
bool dlrec_folds(const char *reason);

/*
 * Insert n records; counts them per reason into stats and redeliveries (rows already there)
 * into stats->dead_letter_duplicates. Records of a folding reason (dlrec_folds) are folded by
 * the queue they were consumed from and their reason: one open record per pair, the first
 * message of the batch its sample, `occurrences` raised by each message (counted in
 * stats->dead_letters_folded when an open record was there already). 0, or -1 with err.
 */
int dlstore_insert(PGconn *db, const dl_record_t *recs, size_t n, executor_stats_t *stats,
                   char *err, size_t errlen) WARN_UNUSED;

/* dlstore_insert, and how many messages each record stands for into occurrences[n]: 1 for a
 * record of its own, k for the first of k folded in this batch, 0 for the others. */
int dlstore_insert_folding(PGconn *db, const dl_record_t *recs, size_t n, int64_t *occurrences,
                           executor_stats_t *stats, char *err, size_t errlen) WARN_UNUSED;

/*
 * Store the unusable ones (reason set) among n messages, each the first member of an element
 * `stride` bytes apart from the next, consumed from `queue`, in one insert; with the execution
 * id when the message named one. Each message's inmsg_t gets occurrences (dlstore_insert_folding)
 * so its log line can be left out when another message's record stands for it.
 */
int dlstore_unusable(PGconn *db, void *first, size_t n, size_t stride, const char *queue,
                     executor_stats_t *stats, char *err, size_t errlen) WARN_UNUSED;

#endif
