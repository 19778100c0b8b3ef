/*
 * POST /api/v1/executions/{id}/retry: a manual retry (docs/retries.md). The statement is the
 * CLI's (q_retry, warren/queries.h): a failed, timed out or abandoned execution becomes
 * requested at once as a manual attempt, which does not use up its retry policy; anything else
 * is refused with why (409). Two retries at once make one attempt: the row lock and the
 * compare-and-swap on status and attempt leave the second one nothing to change.
 */
#include <stdio.h>
#include <string.h>
#include "executor/api.h"
#include "warren/log.h"
#include "warren/queries.h"

void retry_handle(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id_text[24];
    int64_t id;
    if (!api_execution_verb(x, r, "retry", who, sizeof who, &id, id_text, sizeof id_text))
        return;
    const char *params[] = {id_text};
    PGresult *res = NULL;
    if (!api_query(x, r, "retrying an execution", q_retry, 1, params, &res))
        return;
    if (PQntuples(res) == 0) {
        http_error(r, 404, "not_found", "no execution %s", id_text);
    } else if (!strcmp(PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1))) {
        const char *why = retry_refusal(PQgetvalue(res, 0, 0));
        http_error(r, 409, "conflict", "execution %s is %s: %s", id_text, PQgetvalue(res, 0, 0),
                   why ? why : "try again in a moment");
    } else {
        log_kv(LOG_INFO, "manual retry", "execution_id", id_text, "from", PQgetvalue(res, 0, 0),
               "attempt", PQgetvalue(res, 0, 2), "by", who, NULL);
        http_reply_json(r, 200, PQgetvalue(res, 0, 3));
    }
    PQclear(res);
}
