/* What the HTTP server's files share and no other module sees (src/http/server.c, tls.c). */
#ifndef WARREN_HTTP_INTERNAL_H
#define WARREN_HTTP_INTERNAL_H

#include <event2/bufferevent.h>
#include "warren/http.h"

/* A bufferevent for a connection accepted under t, doing the TLS handshake before any byte of
 * the request reaches evhttp. NULL when out of memory. */
struct bufferevent *http_tls_accept(struct event_base *base, http_tls_t *t);

#endif
