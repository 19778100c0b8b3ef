/*
 * The executor's HTTP API (docs/api.md): its context, its start and keys (api.c, the route
 * table), and what its handlers share (api_request.c; used by api_exec.c, api_dlq.c,
 * api_cancel.c and the others): authorisation, one statement in one transaction on the API's
 * lane with the database's failures turned into HTTP answers, and reading a JSON body. Each
 * returns false after it has answered the request.
 */
#ifndef WARREN_EXECUTOR_API_H
#define WARREN_EXECUTOR_API_H

#include <event2/event.h>
#include <json-c/json.h>
#include <libpq-fe.h>
#include "executor/api_keys.h"
#include "executor/api_wait.h"
#include "executor/cancel.h"
#include "executor/consumer.h"
#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"
#include "warren/http.h"
#include "warren/metrics.h"
#include "warren/mq.h"

/* The name recorded for requests when no key is configured (loopback only). */
#define API_ANONYMOUS "anonymous"

/* What the HTTP server and its handlers use (the argument of every route): the executor lends
 * its lanes, clients, counters and parts to report on; the server and its keys are the API's. */
typedef struct api {
    warren_config_t *cfg; /* borrowed: api.*, and what the handlers read */
    struct event_base *base;
    dbc_pool_t *api_reads, *api_writes; /* borrowed: GET; POST and PATCH */
    const dbc_lanes_t *lanes;           /* borrowed: /readyz and /metrics report on them */
    const consumer_set_t *consumers;    /* borrowed: the same */
    mq_client_t *pub;                   /* borrowed: its breaker, blocked or not */
    executor_stats_t *stats;            /* borrowed */
    cancel_sender_t *cancel;            /* borrowed: the control message of a cancel */
    metrics_registry_t *metrics;        /* borrowed: what /metrics renders */
    const bool *draining;               /* borrowed: the executor drains (503 to new requests) */
    const int64_t *loop_beat_ms;        /* borrowed: the loop's last pump tick (/livez) */
    http_server_t *server;              /* owned; NULL while api.listen is "" */
    api_keys_t keys;
    api_keys_t keys_next; /* read by a reload's prepare step, taken by its apply step */
    http_tls_t *tls_next; /* the same for the TLS files; owned until taken */
    api_waits_t waits;    /* GET /api/v1/executions/{id}?wait_s (api_wait.c) */
} api_t;

/* The HTTP server on api.listen (none when ""): API routes, /livez, /readyz, /metrics. -1
 * (logged) when keys or the address are wrong. Free with api_stop(), also after a failure. */
int api_start(api_t *x) WARN_UNUSED;
void api_stop(api_t *x);
/* SIGHUP: before anything changes, read the keys the loaded configuration names (api.keys,
 * api.keys_file: the file's text may have changed with no key of the configuration) and check
 * them as api_start does; -1 with the problem in err refuses the reload. Nothing while the API
 * is off (api.listen needs a restart). */
int api_keys_prepare(api_t *x, const warren_config_t *loaded, char *err, size_t errlen) WARN_UNUSED;
/* After the reload: the prepared keys replace the running ones; logs their number and names.
 * The TLS files read by api_keys_prepare serve the connections accepted from then on. */
void api_keys_take(api_t *x);

/* The request's key has the scope need or above (for API_SCOPE_READ: any key, or none unless
 * api.auth_reads). who gets the key's name. 401 without a key, 403 for a wrong key or one
 * below need. */
bool api_authorize(api_t *x, http_req_t *r, api_scope_t need, char *who, size_t wholen);
/* The HTTP server's gate (http_set_gate, arg the api_t): a POST or PATCH, or any request with a
 * body, needs a key of scope submit or above, checked on the head before the body is read
 * (401, 403); the route's own scope is checked by its handler. */
int api_gate(const http_head_t *h, void *arg, http_refusal_t *why);

/* Run sql in a transaction of its own; *out gets its result (the caller PQclear()s it).
 * 503 with Retry-After while the database is unreachable, 400 when it refused the input,
 * 500 for anything else. */
bool api_query(api_t *x, http_req_t *r, const char *what, const char *sql, int nparams,
               const char *const *params, PGresult **out);

/* api_query's answers for any transaction: fn runs inside one, its failures become 503, 400
 * or 500. */
bool api_transaction(api_t *x, http_req_t *r, const char *what, dbc_work_fn fn, void *arg);

#define API_CURSOR_PREFIX "c1."
#define API_LIST_DEFAULT_LIMIT 100
#define API_LIST_MAX_LIMIT 1000
/* The cursor parameter ("c1." and an id in hex) as a decimal id in id_text (*out NULL when
 * absent); 400 when it is not one this API gave out. */
bool api_cursor(http_req_t *r, char *id_text, size_t len, const char **out);
/* The limit parameter (default API_LIST_DEFAULT_LIMIT) as text; 400 unless 1..max. */
bool api_limit(http_req_t *r, char *limit, size_t len);
/* Answer 200 {"items": doc, "next_cursor": next} (next: JSON text, api_next_cursor's). */
void api_reply_page(http_req_t *r, const char *doc, const char *next);
/* next_cursor of a page: the JSON text of the cursor after the row's last id (column last_col)
 * when the page is full (column n_col equals limit), else null. */
void api_next_cursor(PGresult *res, int last_col, int n_col, const char *limit, char *next,
                     size_t len);

/* The body as JSON: 415 unless Content-Type is application/json, 400 unless it is one JSON
 * value in valid UTF-8 without NUL characters in strings. The caller puts the value. */
json_object *api_body_json(http_req_t *r);

/* body[0..len) as one JSON value in valid UTF-8 without NUL characters in strings (what
 * api_body_json accepts). NULL with *code (400, or 503 when out of memory) and err. Pure. */
json_object *api_parse_json(const char *body, size_t len, int *code, char *err, size_t errlen);

/* A submission (an object) or a batch (an array of 1 to API_BATCH_MAX of them) checked and
 * rewritten for q_submit: one object per submission appended to rows. The number of them with
 * an idempotency_key (no key twice), or -1 with err (a 400). */
int api_submissions(json_object *in, json_object *rows, char *err, size_t errlen);

/* in is a JSON object whose members are all among known (NULL-terminated); -1 with err (a
 * 400) naming the first other one. Pure. */
int api_fields(json_object *in, const char *const *known, char *err, size_t errlen);
/* The members "worker" (a worker id: pin the new attempt there) and "unpin" (true: let the
 * scheduler choose) of a redrive's body, at most one of them; -1 with err (a 400). Pure. */
int api_pin(json_object *in, const char **worker, bool *unpin, char *err, size_t errlen);

/* The path parameter at i as an id (positive, as execution ids are) of what ("a dead letter");
 * 400 when it is none. */
bool api_path_id(http_req_t *r, size_t i, const char *what, int64_t *id, char *text,
                 size_t textlen);
/* A body that is empty, blank or {}: true; else false after answering 400 (or 415). */
bool api_no_fields(http_req_t *r, const char *what);

/* POST /api/v1/executions/{id}/VERB (cancel, retry): an operate key (who gets its name), the id,
 * no fields; false once the answer is sent. */
bool api_execution_verb(api_t *x, http_req_t *r, const char *what, char *who, size_t wholen,
                        int64_t *id, char *text, size_t textlen);
/* The path parameter at i as an execution id; 400 when it is none. */
bool api_execution_id(http_req_t *r, size_t i, int64_t *id, char *text, size_t textlen);

/* docs/openapi.json as it was at build time (cmake/embed.cmake): api_openapi_json_len bytes
 * and a NUL. */
extern const unsigned char api_openapi_json[];
extern const size_t api_openapi_json_len;
/* GET /api/v1/openapi.json: the document, without a key (api_openapi.c). */
void api_openapi(http_req_t *r, void *arg);

/* api_health.c: /livez, /readyz, /metrics (on the loop, no statement), and the collector of
 * the executor's own parts for /metrics. */
void api_livez(http_req_t *r, void *arg);
void api_readyz(http_req_t *r, void *arg);
void api_metrics(http_req_t *r, void *arg);
void api_collect_parts(metrics_out_t *o, void *arg);

/* api_cancel.c: POST /api/v1/executions/{id}/cancel. */
void cancel_handle(http_req_t *r, void *arg);
/* manual_retry.c: POST /api/v1/executions/{id}/retry. */
void retry_handle(http_req_t *r, void *arg);
/* api_staleness.c: GET /api/v1/staleness. */
void api_staleness(http_req_t *r, void *arg);
/* api_actions.c: GET /api/v1/actions, POST /api/v1/actions/{ref}/pause and /resume. */
void api_actions(http_req_t *r, void *arg);
void api_action_pause(http_req_t *r, void *arg);
void api_action_resume(http_req_t *r, void *arg);
/* api_redrive_tasks.c: POST/GET /api/v1/redrive-tasks, GET /api/v1/redrive-tasks/{id}, GET
 * .../{id}/items, POST .../{id}/cancel and .../{id}/resume. */
void api_redrive_tasks(http_req_t *r, void *arg);
void api_redrive_task(http_req_t *r, void *arg);
void api_redrive_task_cancel(http_req_t *r, void *arg);
void api_redrive_task_resume(http_req_t *r, void *arg);
void api_redrive_task_items(http_req_t *r, void *arg);

/* api_operator.c: GET /api/v1/dead-letters/investigation-queue, POST
 * /api/v1/executions/{id}/investigate and .../complete. */
void api_dl_queue(http_req_t *r, void *arg);
void api_investigate(http_req_t *r, void *arg);
void api_complete(http_req_t *r, void *arg);

/* api_exec.c */
void api_submit(http_req_t *r, void *arg);
void api_get_execution(http_req_t *r, void *arg);
void api_list_executions(http_req_t *r, void *arg);
void api_workers(http_req_t *r, void *arg);

/* api_dlq.c: /api/v1/dead-letters */
void api_dl_list(http_req_t *r, void *arg);
void api_dl_stats(http_req_t *r, void *arg);
void api_dl_one(http_req_t *r, void *arg);
void api_dl_redrive(http_req_t *r, void *arg);
void api_dl_purge(http_req_t *r, void *arg);
void api_dl_resolve(http_req_t *r, void *arg);

#endif
