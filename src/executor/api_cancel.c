/* POST /api/v1/executions/{id}/cancel (docs/api.md): the compare-and-swap, then the worker is
 * told (cancel.c). */
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/exec_status.h"
#include "warren/log.h"
#include "warren/queries.h"

void cancel_handle(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id_text[24];
    int64_t id;
    if (!api_execution_verb(x, r, "cancel", who, sizeof who, &id, id_text, sizeof id_text))
        return;
    const char *params[] = {id_text, who};
    PGresult *res = NULL;
    if (!api_query(x, r, "cancelling an execution", q_cancel, 2, params, &res))
        return;
    if (PQntuples(res) == 0) {
        http_error(r, 404, "not_found", "no execution %s", id_text);
        PQclear(res);
        return;
    }
    const char *before = PQgetvalue(res, 0, 0), *after = PQgetvalue(res, 0, 1);
    exec_status_t b = EXEC_REQUESTED;
    if (trans_status_parse(before, &b) != 0)
        b = EXEC_REQUESTED; /* cannot happen: the column's CHECK lists every status */
    if (b == EXEC_CANCELING) {
        http_reply_json(r, 202, PQgetvalue(res, 0, 4)); /* already on its way */
    } else if (strcmp(before, after) == 0) {
        http_error(r, 409, "conflict", "execution %s is %s: %s", id_text, before,
                   trans_is_terminal(b) ? "it has ended" : "try again in a moment");
    } else {
        x->stats->cancels_requested++;
        log_kv(LOG_INFO, "execution cancel requested", "execution_id", id_text, "from", before,
               "to", after, "by", who, NULL);
        /* A running one must be told; a scheduled one is told so its worker does not start it
         * (the row is cancelled already, whatever the worker says). */
        if ((b == EXEC_RUNNING || b == EXEC_SCHEDULED) && !PQgetisnull(res, 0, 2))
            (void)cancel_publish(x->cancel, id_text, id, atoi(PQgetvalue(res, 0, 3)),
                                 PQgetvalue(res, 0, 2), who);
        http_reply_json(r, b == EXEC_RUNNING ? 202 : 200, PQgetvalue(res, 0, 4));
    }
    PQclear(res);
}
