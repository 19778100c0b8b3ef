/*
 * The operator's actions of docs/api.md, "Operator actions": GET /api/v1/dead-letters/
 * investigation-queue, POST /api/v1/executions/{id}/investigate and .../complete. The rules are
 * the database's (schema/functions/180_operator_actions.sql), shared with `warren investigate`
 * and `warren complete` on the database URL; this file reads the request and turns the outcome
 * into an answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/api.h"
#include "warren/dlq.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/queries.h"

#define NOTES_MAX 10000

void api_dl_queue(http_req_t *r, void *arg)
{
    api_t *x = arg;
    static const char *const allowed[] = {"limit", "cursor", NULL};
    char who[API_KEY_NAME_MAX + 1], limit[16], cursor[80];
    const char *as_of = NULL, *priority = NULL, *after = NULL, *c = NULL;
    if (!api_authorize(x, r, API_SCOPE_READ, who, sizeof who) || !http_query_only(r, allowed) ||
        !api_limit(r, limit, sizeof limit))
        return;
    if ((c = http_query(r, "cursor")) &&
        dlq_queue_cursor(c, cursor, sizeof cursor, &as_of, &priority, &after) != 0) {
        http_error(r, 400, "bad_request", "cursor: not one this API gave out");
        return;
    }
    const char *p[] = {as_of, priority, after, limit};
    PGresult *res = NULL;
    if (!api_query(x, r, "reading the investigation queue", q_dl_queue, 4, p, &res))
        return;
    char *body = dlq_queue_page(res, limit);
    if (body)
        http_reply_json(r, 200, body);
    else
        http_error(r, 503, "unavailable", "out of memory");
    free(body);
    PQclear(res);
}

/* An optional body (empty, blank or an object) as JSON with the members known[]; *in is NULL
 * for none. False after answering 400 or 415. */
static bool optional_body(http_req_t *r, const char *const *known, json_object **in)
{
    char err[ERRBUF_SIZE];
    *in = NULL;
    if (r->body_len == 0 || strspn(r->body, " \t\r\n") == r->body_len)
        return true;
    if (!(*in = api_body_json(r)))
        return false;
    if (!json_object_is_type(*in, json_type_object)) {
        http_error(r, 400, "bad_request", "the body is a JSON object");
        return false;
    }
    if (api_fields(*in, known, err, sizeof err) != 0) {
        http_error(r, 400, "bad_request", "%s", err);
        return false;
    }
    return true;
}

void api_investigate(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id_text[24], err[ERRBUF_SIZE];
    int64_t id;
    json_object *in = NULL;
    static const char *const known[] = {"notes", NULL};
    const char *notes = NULL;
    jf_t f = {NULL, NULL, err, sizeof err};
    if (!api_authorize(x, r, API_SCOPE_OPERATE, who, sizeof who) ||
        !api_execution_id(r, 0, &id, id_text, sizeof id_text) || !optional_body(r, known, &in))
        goto out;
    f.obj = in;
    if (in && jf_string(&f, "notes", false, NOTES_MAX, &notes) < 0) {
        http_error(r, 400, "bad_request", "%s", err);
        goto out;
    }
    const char *p[] = {id_text, who, notes};
    PGresult *res = NULL;
    if (!api_query(x, r, "opening an investigation", q_investigate, 3, p, &res))
        goto out;
    const char *outcome = PQgetvalue(res, 0, 0), *status = PQgetvalue(res, 0, 1);
    if (!strcmp(outcome, "not_found")) {
        http_error(r, 404, "not_found", "no execution %s", id_text);
    } else if (!strcmp(outcome, "ended")) {
        http_error(r, 409, "conflict", "execution %s is %s: there is nothing to investigate",
                   id_text, status);
    } else if (!strcmp(outcome, "open")) {
        http_error(r, 409, "conflict",
                   "execution %s already has open record %s: take that one over "
                   "(PATCH /api/v1/dead-letters/%s)",
                   id_text, PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 2));
    } else {
        log_kv(LOG_INFO, "investigation opened", "execution_id", id_text, "status", status,
               "dead_letter_id", PQgetvalue(res, 0, 2), "by", who, NULL);
        http_reply_json(r, 201, PQgetvalue(res, 0, 3));
    }
    PQclear(res);
out:
    json_object_put(in);
}

/* The body of a completion: "result" (any JSON, required), "notes", "attempt". result_text is
 * the result as JSON text (owned by in). False after answering 400 or 415. */
static bool complete_body(http_req_t *r, json_object **in, const char **result_text,
                          const char **notes, char *attempt, size_t attemptlen)
{
    char err[ERRBUF_SIZE];
    static const char *const known[] = {"result", "notes", "attempt", NULL};
    if (!optional_body(r, known, in))
        return false;
    if (!*in) {
        http_error(r, 400, "bad_request", "give the body {\"result\": JSON} (notes, attempt)");
        return false;
    }
    jf_t f = {*in, NULL, err, sizeof err};
    json_object *result = NULL;
    int64_t a = 0;
    int has_attempt = 0;
    if (!json_object_object_get_ex(*in, "result", &result)) {
        http_error(r, 400, "bad_request", "field 'result' is missing (any JSON value; null too)");
        return false;
    }
    if (jf_string(&f, "notes", false, NOTES_MAX, notes) < 0 ||
        (has_attempt = jf_int(&f, "attempt", false, 1, INT32_MAX, &a)) < 0) {
        http_error(r, 400, "bad_request", "%s", err);
        return false;
    }
    *result_text = json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN);
    attempt[0] = '\0';
    if (has_attempt)
        snprintf(attempt, attemptlen, "%lld", (long long)a);
    return true;
}

void api_complete(http_req_t *r, void *arg)
{
    api_t *x = arg;
    char who[API_KEY_NAME_MAX + 1], id_text[24], attempt[16];
    int64_t id;
    json_object *in = NULL;
    const char *result = NULL, *notes = NULL;
    char *cfg = NULL;
    if (!api_authorize(x, r, API_SCOPE_OPERATE, who, sizeof who) ||
        !api_execution_id(r, 0, &id, id_text, sizeof id_text) ||
        !complete_body(r, &in, &result, &notes, attempt, sizeof attempt))
        goto out;
    if (!(cfg = dlq_staleness_cfg(x->cfg))) {
        http_error(r, 503, "unavailable", "out of memory");
        goto out;
    }
    const char *p[] = {id_text, result, who, notes, attempt[0] ? attempt : NULL, cfg};
    PGresult *res = NULL;
    if (!api_query(x, r, "completing an execution by hand", q_complete, 6, p, &res))
        goto out;
    const char *outcome = PQgetvalue(res, 0, 0), *before = PQgetvalue(res, 0, 1);
    if (!strcmp(outcome, "not_found")) {
        http_error(r, 404, "not_found", "no execution %s", id_text);
    } else if (!strcmp(outcome, "conflict")) {
        http_error(r, 409, "conflict", "execution %s is %s: %s", id_text, before,
                   PQgetvalue(res, 0, 3));
    } else {
        log_kv(LOG_INFO, "execution completed by hand", "execution_id", id_text, "from", before,
               "attempt", PQgetvalue(res, 0, 2), "by", who, NULL);
        http_reply_json(r, 200, PQgetvalue(res, 0, 4));
    }
    PQclear(res);
out:
    free(cfg);
    json_object_put(in);
}
