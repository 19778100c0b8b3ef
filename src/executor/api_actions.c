/* The API's actions (docs/flow-control.md, "Pausing an action"): GET /api/v1/actions (read),
 * POST /api/v1/actions/{ref}/pause and /resume (admin). The statements are the CLI's
 * (warren/queries.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/ids.h"
#include "warren/log.h"
#include "warren/queries.h"
#include "warren/retry.h"
#include "warren/utf8.h"

void api_actions(http_req_t *r, void *arg)
{
    api_t *x = arg;
    static const char *const allowed[] = {NULL};
    char who[API_KEY_NAME_MAX + 1];
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) || !http_query_only(r, allowed))
        return;
    char *limits = retry_action_limits_json(x->cfg);
    const char *p[] = {limits};
    PGresult *res = NULL;
    if (limits && api_query(x, r, "reading the actions", q_actions, 1, p, &res)) {
        size_t len = strlen(PQgetvalue(res, 0, 0)) + 32;
        char *body = malloc(len);
        if (body) {
            snprintf(body, len, "{\"actions\":%s}", PQgetvalue(res, 0, 0));
            http_reply_json(r, 200, body);
        }
        free(body);
    }
    if (!r->replied)
        http_error(r, 503, "unavailable", "out of memory");
    PQclear(res);
    free(limits);
}

/* pause or resume: the same shape, the statement and the word differ. */
static void pause_or_resume(api_t *x, http_req_t *r, bool pause)
{
    const char *verb = pause ? "pause" : "resume";
    char who[API_KEY_NAME_MAX + 1], what[32];
    snprintf(what, sizeof what, "%s of an action", verb);
    if (!api_authorize(x, r, API_SCOPE_ADMIN, who, sizeof who))
        return;
    const char *ref = r->params[0];
    if (!ids_action_ref_valid(ref)) {
        http_error(r, 400, "bad_request", "'%.*s' is not an action_ref: %s", utf8_prec(ref, 64),
                   ref, IDS_ACTION_REF_RULE);
        return;
    }
    if (!api_no_fields(r, what))
        return;
    const char *p[] = {ref, who};
    PGresult *res = NULL;
    if (!api_query(x, r, pause ? "pausing an action" : "resuming an action",
                   pause ? q_action_pause : q_action_resume, 2, p, &res))
        return;
    log_kv(LOG_WARN,
           pause ? "action paused: its executions are not dispatched until resumed"
                 : "action resumed",
           "action_ref", ref, "by", who, "doc", PQgetvalue(res, 0, 0), NULL);
    http_reply_json(r, 200, PQgetvalue(res, 0, 0));
    PQclear(res);
}

void api_action_pause(http_req_t *r, void *arg)
{
    pause_or_resume(arg, r, true);
}

void api_action_resume(http_req_t *r, void *arg)
{
    pause_or_resume(arg, r, false);
}
