/*
 * A minimal HTTP/1.0 GET client for the broker's management API: plain HTTP with basic auth,
 * one request per connection, bounded in time and size. Not a general HTTP client: no TLS,
 * no redirects, no chunked bodies (HTTP/1.0 requests never get them).
 */
#ifndef WARREN_MQ_HTTP_GET_H
#define WARREN_MQ_HTTP_GET_H

#include "warren/common.h"

#define HTTP_MAX_RESPONSE (8 * 1024 * 1024)

typedef struct http_url {
    char host[256];
    char port[8];
    char auth[256]; /* "user:password" percent-decoded; "" when the URL carries none */
    char base[256]; /* path prefix without a trailing '/'; "" for none */
} http_url_t;

typedef struct http_response {
    int status; /* e.g. 200, 404 */
    char *body; /* NUL-terminated; owned, released by http_response_free() */
    size_t body_len;
} http_response_t;

/* Parse "http://[user[:pass]@]host[:port][/base]". */
int http_url_parse(const char *url, http_url_t *u, char *err, size_t errlen) WARN_UNUSED;
/* The request text for GET base+path; -1 when it does not fit in buf. */
int http_build_request(const http_url_t *u, const char *path, char *buf, size_t len) WARN_UNUSED;
/* Split a complete raw response into status and body (checks Content-Length when given). */
int http_parse_response(const char *raw, size_t len, http_response_t *out, char *err,
                        size_t errlen) WARN_UNUSED;
/* GET base+path within timeout_ms. Any HTTP status is a success here; check out->status.
 * The caller frees out with http_response_free() (also safe after a failure). */
int http_get(const http_url_t *u, const char *path, int timeout_ms, http_response_t *out, char *err,
             size_t errlen) WARN_UNUSED;
void http_response_free(http_response_t *r);

#endif
