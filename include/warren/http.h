/*
 * The small HTTP server both daemons run on their event loop (libevent's evhttp): the
 * executor's API, health and metrics, and each worker's health and metrics. It adds what
 * evhttp 2.1 lacks for a server that faces the network: a bound on connections that slow or
 * idle clients cannot hold against new ones (health probes); every request head read whole and strictly (http_head_parse) and passed
 * through a gate (the API's keys) before evhttp sees it, so that a refused request has none of
 * its body read; a byte budget for the bodies of all connections; deadlines for a head and a
 * body (a client sending a byte a second is closed, whatever the per-read timeout) and for a
 * kept-alive connection left idle; routing with path parameters, 404/405, and JSON errors
 * {"error","detail"} for everything, evhttp's own included.
 * Handlers run on the loop and answer before they return, except those of routes marked
 * HTTP_WAITS, which run on fibers and may wait.
 */
#ifndef WARREN_HTTP_H
#define WARREN_HTTP_H

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include "warren/breaker.h"
#include "warren/common.h"
#include "warren/metrics.h"

typedef struct http_limits {
    int max_connections;      /* open connections; at the limit a new one takes the slot of the one
                            that has waited longest without a request in flight (a slow head,
                            an idle kept-alive); the listener pauses when there is none */
    size_t max_header_bytes;  /* request line and headers */
    size_t max_body_bytes;    /* a larger Content-Length gets 413 before the body is read */
    size_t body_budget_bytes; /* bodies of all connections together; past it 503 */
    int read_timeout_s;       /* a read or write that makes no progress this long closes */
    int header_timeout_s;     /* a request head must arrive whole within this */
    int body_timeout_s;       /* a body must arrive whole within this after its head */
    int idle_timeout_s;       /* a kept-alive connection without a request is closed */
} http_limits_t;

enum { HTTP_GET = 1, HTTP_POST = 2, HTTP_PATCH = 4 };
/* With the methods of a route: its handler reads the query string of a GET and refuses the
 * parameters it does not know (http_query_only). Any other request with a query parameter
 * gets 400. */
#define HTTP_QUERY 128
/* With the methods of a route: its handler may wait (the database, the broker), so it runs on a
 * fiber of its own (warren/fiber.h) and the loop serves other requests meanwhile. The reply may
 * come after on_request returned; a client that leaves first gets none (replies go nowhere). */
#define HTTP_WAITS 64

#define HTTP_MAX_PARAMS 4

/* One request as a handler sees it. Everything points into the request: valid until the
 * handler returns. req is NULL once the client has gone (HTTP_WAITS routes only). */
typedef struct http_req {
    struct evhttp_request *req;
    int method;                          /* HTTP_GET, HTTP_POST or HTTP_PATCH */
    const char *path;                    /* decoded, without the query */
    const char *params[HTTP_MAX_PARAMS]; /* the {} segments of the route, in order */
    struct evkeyvalq query;              /* parsed query string */
    const char *body;                    /* NUL-terminated copy; "" when none */
    size_t body_len;
    bool replied;
} http_req_t;

typedef void (*http_handler_fn)(http_req_t *r, void *arg);

/* A request head as http_head_parse read it; the strings point into the parsed buffer. */
typedef struct http_head {
    int method;         /* HTTP_GET, HTTP_POST, HTTP_PATCH; 0 for HEAD, PUT, DELETE, OPTIONS */
    const char *target; /* as sent: path and query, still percent-encoded */
    bool http11, has_host, has_length, has_encoding, no_body; /* no_body: HEAD */
    size_t content_length;                                    /* 0 without Content-Length */
    const char *authorization, *api_key; /* the first of each header, NULL when absent */
} http_head_t;

/* Why a request is refused before its body: the status and the JSON error's two fields. */
typedef struct http_refusal {
    int code;
    const char *error; /* static */
    char detail[160];
} http_refusal_t;

/*
 * Read a whole head (buf[0..len) ending with CRLF CRLF; changed in place) strictly: 400 for a
 * line not ending with CRLF, a folded or malformed header, a NUL or a control character, a
 * duplicate or malformed Content-Length, Transfer-Encoding beside Content-Length, a target that
 * is not an origin-form path or whose path decodes to a control character, and HTTP/1.1 without
 * one Host, or a HEAD with a body; 501 for TRACE, CONNECT, unknown methods and Transfer-Encoding; 505 for versions other
 * than HTTP/1.0 and 1.1; 417 for an Expect other than 100-continue. -1 with why filled. Pure.
 */
int http_head_parse(char *buf, size_t len, http_head_t *h, http_refusal_t *why) WARN_UNUSED;

/* Asked once a head has arrived whole, before any of its body is read: 0 lets the request in,
 * -1 refuses it with why (401, 403, ...). */
typedef int (*http_gate_fn)(const http_head_t *h, void *arg, http_refusal_t *why);

typedef struct http_server http_server_t;

/* A server on base (borrowed), nothing bound yet; name is for logs ("api", "health").
 * Free with http_free(). NULL when out of memory. */
http_server_t *http_new(struct event_base *base, const char *name, const http_limits_t *limits);
void http_free(http_server_t *s);
/*
 * Route methods (HTTP_GET | HTTP_POST | HTTP_PATCH) on pattern, whose segments are literal or "{}" (one
 * non-empty segment, handed over in r->params): "/api/v1/executions/{}/cancel". A path that
 * matches no pattern is 404; one whose pattern lacks the method is 405. -1 when the table is full.
 */
int http_route(http_server_t *s, int methods, const char *pattern, http_handler_fn fn,
               void *arg) WARN_UNUSED;
/* The gate every request head passes (arg borrowed); none by default. */
void http_set_gate(http_server_t *s, http_gate_fn fn, void *arg);
/* Bind host:port ("127.0.0.1:8080", "[::1]:8080", ":8080" for every address, port 0 for any
 * free one) and log the address. -1 with err when it cannot. */
int http_listen(http_server_t *s, const char *hostport, char *err, size_t errlen) WARN_UNUSED;
/*
 * HTTPS. A server TLS context from PEM files: the certificate (with its chain), its key and,
 * when client_ca_file is set, the CA whose certificates clients must present. TLS 1.2 at
 * least. The *_key fields name the configuration keys, for errors ("api.tls_key_file /x: ...").
 * NULL with err when a file cannot be used.
 */
typedef struct http_tls http_tls_t;
typedef struct http_tls_files {
    const char *cert_file, *key_file, *client_ca_file;
    const char *cert_key, *key_key, *client_ca_key;
} http_tls_files_t;
http_tls_t *http_tls_new(const http_tls_files_t *f, char *err, size_t errlen) WARN_UNUSED;
void http_tls_free(http_tls_t *t);
/* Serve connections accepted from now on with t (owned by s from then on; NULL: plain HTTP).
 * Connections already open keep what they began with: a reload swaps certificates this way. */
void http_set_tls(http_server_t *s, http_tls_t *t);
/* Does s serve HTTPS? */
bool http_tls_on(const http_server_t *s);
/* The port bound, 0 before http_listen. */
int http_port(const http_server_t *s);
/* Connections open now. */
size_t http_connections(const http_server_t *s);
/* How many statuses a head may be refused with (server.c's refusal_codes). */
#define HTTP_REFUSAL_CODES 9
/* For /metrics, of the server on the configuration key listen_key ("api.listen"):
 * warren_http_evicted_total (connections closed to give their slot to a new one, see
 * http_limits_t), warren_http_timed_out_total (closed with a head or body unfinished at its
 * deadline) and warren_http_refused_total{code} (requests refused on their heads). s may be
 * NULL: zeros. */
void http_metrics_clients(metrics_out_t *o, const http_server_t *s, const char *listen_key);

/* Split "host:port" / "[v6]:port" / ":port"; host "" means every address. Pure. */
int http_split_hostport(const char *s, char *host, size_t hostlen, int *port) WARN_UNUSED;
/* Match path against pattern (see http_route); captures go into params, each a copy in buf.
 * Pure. */
bool http_route_match(const char *pattern, const char *path, const char **params, char *buf,
                      size_t buflen);
/* Equal, in time that depends on the lengths only, never on where the texts differ. */
bool http_secret_equal(const char *a, const char *b);

/* Replies. Each request gets exactly one; later ones are ignored. */
void http_reply(http_req_t *r, int code, const char *content_type, const char *body, size_t len);
void http_reply_json(http_req_t *r, int code, const char *json);
/* {"error": error, "detail": printf(fmt)} */
void http_error(http_req_t *r, int code, const char *error, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Add a response header before replying. */
void http_add_header(http_req_t *r, const char *name, const char *value);
/* A request header (case-insensitive), NULL when absent. */
const char *http_header(http_req_t *r, const char *name);
/* A query parameter, NULL when absent. */
const char *http_query(http_req_t *r, const char *name);
/* 400 and false when the query has a parameter not in allowed (NULL-terminated). */
bool http_query_only(http_req_t *r, const char *const *allowed);

/* ---- health and metrics (src/http/health.c) ---- */

/* /livez: 200 {"status":"ok","loop_beat_age_ms"} (loop_beat_ms: monotonic, last loop tick). */
void http_reply_livez(http_req_t *r, int64_t loop_beat_ms);
/* /metrics: the registry in Prometheus' text format. */
void http_reply_metrics(http_req_t *r, const metrics_registry_t *m);

/* /metrics: warren_breaker_state, warren_breaker_rejections_total and
 * warren_breaker_opened_total, one sample each per breaker, labelled breaker="name". */
typedef struct http_breaker_ref {
    const char *name;
    const breaker_t *b;
} http_breaker_ref_t;
void http_metrics_breakers(metrics_out_t *o, const http_breaker_ref_t *refs, size_t n);

/* /readyz: checks gathered one by one, then one answer: 200 ready, 200 degraded (a half-open
 * breaker), 503 not_ready, the body {status, checks, reasons}. */
typedef struct http_ready {
    struct json_object *body, *checks, *reasons;
    bool ready, degraded;
} http_ready_t;

void http_ready_init(http_ready_t *h);
/* A check named name in state; when not ok, reason joins "reasons" and it is not ready. */
void http_ready_check(http_ready_t *h, const char *name, const char *state, bool ok,
                      const char *reason);
/* A check that, when degraded, makes the answer degraded (still 200) with reason. */
void http_ready_degraded(http_ready_t *h, const char *name, const char *state, bool degraded,
                         const char *reason);
/* A breaker: open is not ready, half-open degraded. */
void http_ready_breaker(http_ready_t *h, const char *name, const breaker_t *b);
/* Answer (with key: value added to the body when key is not NULL) and free what h holds. */
void http_ready_reply(http_req_t *r, http_ready_t *h, const char *key, const char *value);

#endif
