/*
 * Dead letters as a workflow (docs/dead-letters.md): the words, the filter, the statements and
 * the redrive that the executor's API and `warren dlq` on the database URL share, so both
 * print the same documents and give the same answers. src/db/dlq.c, src/db/reattempt.c.
 */
#ifndef WARREN_DLQ_H
#define WARREN_DLQ_H

#include <json-c/json.h>
#include <libpq-fe.h>
#include "warren/common.h"
#include "warren/config.h"

/* A bulk action on an id list takes at most this many ids. */
#define DLQ_IDS_MAX 1000

extern const char *const dlq_reasons[];     /* the investigation words, NULL-terminated */
extern const char *const dlq_resolutions[]; /* the resolutions, NULL-terminated */
bool dlq_word_known(const char *const *words, const char *w);

/*
 * A filter checked and normalised for the statements (schema 021's warren_dl_match): in is a
 * JSON object (values may be strings, as a query string gives them) with resolution, reason,
 * queue, action, execution_id, since, until, q and ids (an array of 1 to DLQ_IDS_MAX record ids;
 * allow_ids false refuses it). A new object (the caller puts it), or NULL with err.
 */
json_object *dlq_filter(json_object *in, bool allow_ids, char *err, size_t errlen);

/* Records matching filter $1 (jsonb) newest first, at most $2: "doc" (a JSON array), "last_id"
 * (the smallest id, the next page's cursor) and "n". This and q_dl_stats use their indexes only
 * when planned for the filter's value (an unnamed statement, or plan_cache_mode
 * force_custom_plan), and a search sorts its matches (enable_sort on): schema 027. */
extern const char q_dl_list[];
/* One record's full document "doc" (the item, the raw message, the snapshot); $1 id. */
extern const char q_dl_show[];
/* The investigation queue (the view dead_letter_investigation_queue): open records, most urgent
 * first, as a JSON array "doc" of list items with their "priority" (warren_dl_priority at one
 * as_of), "n" and "next" (the cursor after the last row). $1 as_of in microseconds since the
 * epoch (NULL: now), $2 and $3 the priority and id of the last row of the previous page (NULL:
 * the first page), $4 limit. The cursor is DLQ_QUEUE_CURSOR_PREFIX "AS_OF_PRIORITY_ID". */
#define DLQ_QUEUE_CURSOR_PREFIX "q1."
extern const char q_dl_queue[];
/* A queue cursor c as q_dl_queue's $1..$3: copied into buf[len], split at '_', each part
 * checked (as_of and id 1..18 digits, the priority digits with at most one point). 0, or -1
 * when c is not one warren gave out (the parts are then NULL). */
int dlq_queue_cursor(const char *c, char *buf, size_t len, const char **as_of,
                     const char **priority, const char **id) WARN_UNUSED;
/* The page document of the queue, {"items": doc, "next_cursor": next or null}, from a row of
 * q_dl_queue and its limit (malloc'd; NULL when out of memory). */
char *dlq_queue_page(PGresult *res, const char *limit);
/* Counts of the records matching $1: by reason, queue and resolution, the oldest pending age
 * and the mean time to resolve, as "doc". */
extern const char q_dl_stats[];
/* Set resolution, notes, metadata of record $1 from $2 (a JSON object checked by
 * dlq_patch_check) on behalf of $3; "doc" of the record after, no row: no such record. */
extern const char q_dl_patch[];
/* Delete the closed records matching $1 if they are exactly $2 (NULL: count only): "matched",
 * "deleted". Pending and investigating records are never deleted. */
extern const char q_dl_purge[];

/* Close the open records (pending, investigating) matching $1 if they are exactly $2 (NULL:
 * count only): resolution $3 (a closed one), resolved_by $4, $5 appended to their notes.
 * "matched", "resolved". */
extern const char q_dl_resolve[];
/* The resolutions a bulk resolve may set: the closed ones. */
bool dlq_resolution_closed(const char *resolution);
/* The note a bulk resolve appends ($5 of q_dl_resolve): who did it, and their notes (or NULL). */
void dlq_resolve_note(char *buf, size_t len, const char *by, const char *notes);

/* A PATCH body checked: resolution (a known word), notes (text or null), metadata (an object);
 * at least one of them. 0, or -1 with err. */
int dlq_patch_check(json_object *in, char *err, size_t errlen);

/* What a redrive did. */
typedef enum {
    DLQ_REDRIVEN,     /* a new attempt was asked for; the record is manually_resolved */
    DLQ_NOT_FOUND,    /* no such record */
    DLQ_ALREADY,      /* the record was redriven before */
    DLQ_CLOSED,       /* the record is closed (resolved otherwise) */
    DLQ_NO_EXECUTION, /* the record names no execution, or one that does not exist */
    DLQ_SKIPPED,      /* the execution moved on (ended otherwise, running, another attempt) */
    DLQ_MAX_REDRIVES  /* the execution was redriven dead_letter.max_redrives times already */
} dlq_redrive_result_t;

/* The word a bulk redrive task's item gives for a result: "moved", or why it was skipped
 * (already_redriven, not_found, closed, no_execution, moved_on, max_redrives). */
const char *dlq_redrive_word(dlq_redrive_result_t result);

/*
 * Redrive record id inside the caller's transaction: the record is locked, then the execution
 * gets a new attempt through reattempt() (fenced: it must still be failed, timeout or abandoned
 * on the attempt the record saw) and the record becomes manually_resolved by `by`, linked to
 * it. worker: pin the new attempt there (NULL: keep the pin); unpin: let the scheduler choose.
 * max_redrives: an execution redriven that many times already is refused (0: no limit). *doc gets the record's document after (malloc'd; NULL when not found), why a sentence for a
 * refusal. -1 with err on a database error.
 */
int dlq_redrive(PGconn *db, int64_t id, const char *worker, bool unpin, int max_redrives,
                const char *by, dlq_redrive_result_t *result, char **doc, char *why, size_t whylen,
                char *err, size_t errlen) WARN_UNUSED;

/*
 * A new attempt of execution id, not counted against the retry policy: back to requested with
 * attempt + 1 (a late report of the dead attempt is fenced out) and redrive_count + 1, pinned to
 * worker (NULL: as it was; unpin: to none), with a history row noting `note`. Fenced: only if
 * the execution is failed, timeout or abandoned on attempt `attempt`. 1 done (*new_attempt
 * set), 0 fenced out (status: what it is now, "" when there is no such execution), -1 with err.
 */
int reattempt(PGconn *db, int64_t id, int attempt, const char *worker, bool unpin, const char *note,
              int *new_attempt, char *status, size_t statuslen, char *err,
              size_t errlen) WARN_UNUSED;

/* ---- bulk redrive tasks (schema 024) ---- */

#define DLQ_RATE_MAX 500      /* records per second: the hard cap of a task's rate */
#define DLQ_CANARY_MAX 100000 /* records in a task's canary at most */
extern const char *const dlq_task_statuses[]; /* running, completed, cancelling, ... */
/* The source a filter drains: its queue, or "*" for every queue. */
const char *dlq_task_source(json_object *filter);
/* Start a task: $1 filter (dlq_filter's), $2 source, $3 rate, $4 worker, $5 unpin, $6 by,
 * $7 canary_count, $8 max_failure_ratio (schema 034). One row "doc" (the task); no row when
 * an active (or paused) task drains the same source. */
extern const char q_rt_create[];
/* The active or paused task of source $1: "id". */
extern const char q_rt_active[];
/* One task "doc" with skipped_by_reason and outcomes, the counts of its items; $1 id. */
extern const char q_rt_get[];
/* A page of task $1's items after record $2 ("0" from the start), $3 result or NULL, $4 outcome
 * (or "pending") or NULL, $5 limit: the task's count (0: no such task), the items as a JSON
 * array, the last record id, the items' count. */
extern const char q_rt_items[];
/* Tasks newest first as a JSON array "doc": $1 status or NULL, $2 limit. */
extern const char q_rt_list[];
/* Ask task $1 to stop: a running one becomes cancelling (the executor then makes it
 * cancelled), a paused_canary one cancelled. "before" (its status found) and "doc"; no row: no
 * such task. */
extern const char q_rt_cancel[];
/* Resume paused_canary task $1 by $2: running again, without a second canary. "before" and
 * "doc"; no row: no such task. */
extern const char q_rt_resume[];

/* ---- staleness (schema 022) ---- */

extern const char *const dlq_healths[]; /* healthy, warning, stale; NULL-terminated */
/* The staleness.* keys as the JSON document schema 022's functions take (malloc'd text). */
char *dlq_staleness_cfg(const warren_config_t *cfg);
/* The non-terminal executions with time in state, threshold and health, oldest id first, as
 * a JSON array "doc": $1 the thresholds (dlq_staleness_cfg), $2 a health or NULL, $3 limit. */
extern const char q_staleness[];

#endif
