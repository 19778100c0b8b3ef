/*
 * What the executor's API handlers share (api.c, api_exec.c, cancel.c): authorisation, one
 * statement in one transaction with the database's failures turned into HTTP answers, and
 * reading a JSON body. Each returns false after it has answered the request.
 */
#ifndef WARREN_EXECUTOR_API_H
#define WARREN_EXECUTOR_API_H

#include <json-c/json.h>
#include <libpq-fe.h>
#include "executor/executor.h"

/* The name recorded for requests when no key is configured (loopback only). */
#define API_ANONYMOUS "anonymous"

/* The request's key allows it (a write key for write; for a read, any key, or none unless
 * api.auth_reads). who gets the key's name. 401 without a key, 403 for a wrong key or a read
 * key on a write. */
bool api_authorize(executor_t *x, http_req_t *r, bool write, char *who, size_t wholen);

/* Run sql in a transaction of its own; *out gets its result (the caller PQclear()s it).
 * 503 with Retry-After while the database is unreachable, 400 when it refused the input,
 * 500 for anything else. */
bool api_query(executor_t *x, http_req_t *r, const char *what, const char *sql, int nparams,
               const char *const *params, PGresult **out);

/* The body as JSON: 415 unless Content-Type is application/json, 400 unless it is one JSON
 * value in valid UTF-8 without NUL characters in strings. The caller puts the value. */
json_object *api_body_json(http_req_t *r);

/* body[0..len) as one JSON value in valid UTF-8 without NUL characters in strings (what
 * api_body_json accepts). NULL with *code (400, or 503 when out of memory) and err. Pure. */
json_object *api_parse_json(const char *body, size_t len, int *code, char *err, size_t errlen);

/* A submission (an object) or a batch (an array of 1 to API_BATCH_MAX of them) checked and
 * rewritten for q_submit: one object per submission appended to rows. -1 with err (a 400). */
int api_submissions(json_object *in, json_object *rows, char *err, size_t errlen);

/* A body that is empty, blank or {}: true; else false after answering 400 (or 415). */
bool api_no_fields(http_req_t *r, const char *what);

/* POST /api/v1/executions/{id}/VERB (cancel, retry): a write key (who gets its name), the id,
 * no fields; false once the answer is sent. */
bool api_execution_verb(executor_t *x, http_req_t *r, const char *what, char *who, size_t wholen,
                        int64_t *id, char *text, size_t textlen);
/* The path parameter at i as an execution id; 400 when it is none. */
bool api_execution_id(http_req_t *r, size_t i, int64_t *id, char *text, size_t textlen);

/* api_exec.c */
void api_submit(http_req_t *r, void *arg);
void api_get_execution(http_req_t *r, void *arg);
void api_list_executions(http_req_t *r, void *arg);
void api_workers(http_req_t *r, void *arg);

#endif
