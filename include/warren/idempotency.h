/*
 * Idempotent submission (docs/api.md, "Idempotent submission"), shared by the executor's API
 * and `warren submit` on the database: submissions that carry an idempotency key are inserted
 * together with their keys (execution_idempotency_keys, schema 032) in one statement, so that a
 * key names one execution whichever process submits it, and a key given again answers with
 * that execution. Submissions without a key use q_submit (warren/queries.h) and never get here.
 */
#ifndef WARREN_IDEMPOTENCY_H
#define WARREN_IDEMPOTENCY_H

#include <libpq-fe.h>
#include "warren/common.h"

/* What idem_submit did. Free with idem_outcome_free(). */
typedef struct idem_outcome {
    /* owned: one row per submission, in input order: id (the new execution, or the one its
     * key names), replayed ("t": the key named an execution already), conflict ("t": ... of a
     * different request) and row */
    PGresult *res;
    int conflict; /* the first submission in conflict; -1: none. With one, nothing was written */
    int replayed; /* submissions answered with the execution their key names */
    char *row;    /* owned: one submission: its execution's JSON text with "replayed" */
} idem_outcome_t;

/*
 * Insert the submissions of rows (q_submit's JSON array, each member may add idempotency_key,
 * a key ids_idempotency_key_valid accepts, no key twice) as submitted_by who, inside the
 * caller's transaction. A key taken less than window_s seconds ago by the same request (the
 * submission's fields, whatever their order) is replayed: its execution is the answer and no
 * row is added; by another request it is a conflict, and then the whole batch is undone (to a
 * savepoint; the transaction stays usable). An expired key is taken anew. -1 with err when the
 * database failed.
 */
int idem_submit(PGconn *db, const char *rows, const char *who, int window_s, idem_outcome_t *out,
                char *err, size_t errlen) WARN_UNUSED;
void idem_outcome_free(idem_outcome_t *o);

#endif
