/* GET /api/v1/staleness: every non-terminal execution's health against the staleness
 * thresholds (docs/api.md; the detector's rounds are staleness.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/dlq.h"

void api_staleness(http_req_t *r, void *arg)
{
    api_t *x = arg;
    static const char *const allowed[] = {"health", "limit", NULL};
    char who[API_KEY_NAME_MAX + 1], limit[16];
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) || !http_query_only(r, allowed) ||
        !api_limit(r, limit, sizeof limit))
        return;
    const char *health = http_query(r, "health");
    if (health && !dlq_word_known(dlq_healths, health)) {
        http_error(r, 400, "bad_request", "health: healthy, warning or stale, not '%.40s'", health);
        return;
    }
    char *cfg = dlq_staleness_cfg(x->cfg);
    const char *p[] = {cfg, health, limit};
    PGresult *res = NULL;
    if (cfg && api_query(x, r, "reading staleness", q_staleness, 3, p, &res)) {
        size_t len = strlen(PQgetvalue(res, 0, 0)) + strlen(cfg) + 48;
        char *body = malloc(len);
        if (body) {
            snprintf(body, len, "{\"executions\":%s,\"thresholds\":%s}", PQgetvalue(res, 0, 0),
                     cfg);
            http_reply_json(r, 200, body);
        }
        free(body);
    }
    if (!r->replied)
        http_error(r, 503, "unavailable", "out of memory");
    PQclear(res);
    free(cfg);
}
