/* The HTTP server of both daemons: evhttp plus connection bounds, routing and JSON errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <json-c/json.h>
#include "warren/evloop.h"
#include "warren/fiber.h"
#include "warren/http.h"
#include "warren/log.h"
#include "http/http_internal.h"

#define MAX_ROUTES 64
#define PATH_MAX_BYTES 2048

typedef struct route {
    int methods;
    char pattern[128];
    http_handler_fn fn;
    void *arg;
} route_t;

/* Where a connection is in its stream of requests, as read by on_input ahead of evhttp. */
typedef enum conn_stage {
    STAGE_HEAD,    /* reading a head: evhttp sees its bytes once it is whole and let in */
    STAGE_BODY,    /* body_left bytes of the body to come */
    STAGE_HELD,    /* a request is being answered: what comes next waits in held */
    STAGE_DISCARD, /* refused and answered: everything read is dropped until the close */
} conn_stage_t;

/*
 * One accepted connection. evhttp tells nobody when it accepts or closes one, so the bufferevent
 * is made here (bevcb), held by a reference until the next loop turn, when evhttp has set its
 * callbacks (their argument is the evhttp_connection) and a close callback can be attached.
 */
typedef struct conn {
    struct conn *next;
    struct http_server *srv;
    struct bufferevent *bev; /* referenced until setup */
    struct bufferevent *io;  /* borrowed: the connection's bufferevent, valid until closed */
    struct evhttp_connection *evcon;
    struct event setup_ev, deadline_ev;
    bool closed, feeding, head_armed;
    conn_stage_t stage;
    char *head; /* owned: the head read so far (head_len bytes), NULL between heads */
    size_t head_len, body_left, reserved; /* reserved: of the server's body budget */
    int64_t waiting_since_ms; /* monotonic: accepted, or its last answer sent (evict_one) */
    struct evbuffer *held;    /* owned: bytes read ahead of a request's answer */
    struct http_job *job;     /* the request a fiber handles now (HTTP_WAITS), NULL: none */
} conn_t;

/* A request handled on a fiber of its own (a route with HTTP_WAITS): everything the handler
 * sees is copied here, since the request outlives on_request. */
typedef struct http_job {
    http_req_t r;
    conn_t *conn; /* NULL once the connection is gone: the reply goes nowhere */
    const route_t *route;
    char *path, *body; /* owned */
    char pbuf[PATH_MAX_BYTES];
} http_job_t;

struct http_server {
    struct event_base *base;
    char name[32];
    http_limits_t limits;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    int port;
    route_t routes[MAX_ROUTES];
    size_t n_routes;
    conn_t *conns, *dead; /* open ones; closed ones freed by reap_ev */
    size_t n_conns;
    size_t body_bytes; /* reserved by the bodies of all connections now */
    uint64_t evicted;  /* connections closed to give their slot to a new one */
    uint64_t refused[HTTP_REFUSAL_CODES + 1]; /* requests refused on their heads, by status */
    uint64_t timed_out; /* connections closed with a head or a body begun and not finished */
    bool paused;
    struct event reap_ev, resume_ev;
    http_gate_fn gate;
    void *gate_arg;  /* borrowed */
    http_tls_t *tls; /* owned: new connections do TLS with it; NULL: plain HTTP */
};

/* ---- pure helpers ---- */

int http_split_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':')
            return -1;
        hlen = (size_t)(end - s - 1);
        s++;
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || memchr(s, ':', (size_t)(colon - s)))
            return -1;
        hlen = (size_t)(colon - s);
    }
    if (hlen >= hostlen)
        return -1;
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    const char *p = colon + 1;
    if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5)
        return -1;
    *port = atoi(p);
    return *port <= 65535 ? 0 : -1;
}

bool http_route_match(const char *pattern, const char *path, const char **params, char *buf,
                      size_t buflen)
{
    size_t used = 0, n = 0;
    const char *p = pattern, *q = path;
    while (*p && *q) {
        if (*p != '/' || *q != '/')
            return false;
        p++;
        q++;
        size_t plen = strcspn(p, "/"), qlen = strcspn(q, "/");
        if (plen == 2 && !strncmp(p, "{}", 2)) {
            if (qlen == 0 || n == HTTP_MAX_PARAMS || used + qlen + 1 > buflen)
                return false;
            memcpy(buf + used, q, qlen);
            buf[used + qlen] = '\0';
            params[n++] = buf + used;
            used += qlen + 1;
        } else if (plen != qlen || strncmp(p, q, plen)) {
            return false;
        }
        p += plen;
        q += qlen;
    }
    return !*p && !*q;
}

bool http_secret_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    /* Every byte of b is compared against something, so the time depends on the lengths. */
    unsigned char diff = la != lb;
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(b[i] ^ (la ? a[i % la] : 0));
    return diff == 0;
}

/* ---- replies ---- */

void http_add_header(http_req_t *r, const char *name, const char *value)
{
    if (!r->req)
        return; /* the client left while a fiber handled its request */
    evhttp_add_header(evhttp_request_get_output_headers(r->req), name, value);
}

void http_reply(http_req_t *r, int code, const char *content_type, const char *body, size_t len)
{
    if (r->replied)
        return;
    r->replied = true;
    if (!r->req)
        return;
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(h, "Content-Type", content_type);
    evhttp_add_header(h, "Cache-Control", "no-store");
    struct evbuffer *out = evbuffer_new();
    if (out && len > 0 && evbuffer_add(out, body, len) != 0) {
        evbuffer_free(out);
        out = NULL;
    }
    if (!out) {
        evhttp_send_error(r->req, 500, "out of memory");
        return;
    }
    evhttp_send_reply(r->req, code, NULL, out);
    evbuffer_free(out);
}

void http_reply_json(http_req_t *r, int code, const char *json)
{
    http_reply(r, code, "application/json", json, strlen(json));
}

void http_error(http_req_t *r, int code, const char *error, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(error));
    json_object_object_add(o, "detail", json_object_new_string(detail));
    http_reply_json(r, code, o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "{}");
    json_object_put(o);
}

const char *http_header(http_req_t *r, const char *name)
{
    if (!r->req)
        return NULL;
    return evhttp_find_header(evhttp_request_get_input_headers(r->req), name);
}

const char *http_query(http_req_t *r, const char *name)
{
    return evhttp_find_header(&r->query, name);
}

bool http_query_only(http_req_t *r, const char *const *allowed)
{
    for (struct evkeyval *kv = r->query.tqh_first; kv; kv = kv->next.tqe_next) {
        bool known = false;
        for (size_t i = 0; allowed[i] && !known; i++)
            known = !strcmp(kv->key, allowed[i]);
        if (!known) {
            http_error(r, 400, "bad_request", "unknown query parameter '%.64s'", kv->key);
            return false;
        }
    }
    return true;
}

/* ---- connections ---- */

/* A refused request's client gets this long to stop sending: what it still sends is read and
 * dropped, so that closing does not reset the connection before it has read the answer. */
#define LINGER_S 2

static void conn_arm(conn_t *c, int seconds)
{
    if (!c->closed)
        (void)evloop_arm(&c->deadline_ev, (int64_t)seconds * 1000);
}

/* By its bufferevent: a request may come before setup has learnt the evhttp_connection. */
static conn_t *conn_of(http_server_t *s, struct evhttp_connection *evcon)
{
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    for (conn_t *c = s->conns; c && bev; c = c->next)
        if (c->io == bev)
            return c;
    return NULL;
}

/* The connection's evhttp_connection: known from setup on, or read off the bufferevent's
 * callbacks before. NULL when evhttp has not taken the bufferevent yet. */
static struct evhttp_connection *conn_evcon(conn_t *c)
{
    if (c->evcon || c->closed)
        return c->evcon;
    bufferevent_data_cb rd, wr;
    bufferevent_event_cb ev;
    void *cbarg = NULL;
    bufferevent_getcb(c->io, &rd, &wr, &ev, &cbarg);
    return cbarg;
}

static void conn_closed(conn_t *c);

/* A connection that may give its slot away: no request of it is past its head (none in flight,
 * no body coming), so closing it loses nothing but a head that did not come in time, or an idle
 * kept-alive connection. */
static bool evictable(const conn_t *c)
{
    return !c->closed && (c->stage == STAGE_HEAD || c->stage == STAGE_DISCARD);
}

static bool any_evictable(const http_server_t *s, const conn_t *except)
{
    for (const conn_t *c = s->conns; c; c = c->next)
        if (c != except && evictable(c))
            return true;
    return false;
}

/*
 * At the connection limit, the connection that has waited longest without a request in flight
 * is closed for a new one: slow or idle clients cannot keep others (health probes) out. false
 * when every connection has a request past its head.
 */
static bool evict_one(http_server_t *s, const conn_t *except)
{
    conn_t *victim = NULL;
    for (conn_t *c = s->conns; c; c = c->next)
        if (c != except && evictable(c) && conn_evcon(c) &&
            (!victim || c->waiting_since_ms < victim->waiting_since_ms))
            victim = c;
    if (!victim)
        return false;
    s->evicted++;
    evhttp_connection_free(conn_evcon(victim)); /* calls on_conn_close once set up */
    conn_closed(victim);
    return true;
}

/* The listener pauses only when every slot holds a request past its head (evict_one). */
static void resume_listener(http_server_t *s)
{
    if (s->paused && s->bound &&
        (s->n_conns < (size_t)s->limits.max_connections || any_evictable(s, NULL))) {
        evconnlistener_enable(evhttp_bound_socket_get_listener(s->bound));
        s->paused = false;
    }
}

/* A connection left the evictable stages: at the limit with none left, new clients wait. */
static void pause_if_full(http_server_t *s)
{
    if (!s->paused && s->bound && s->n_conns >= (size_t)s->limits.max_connections &&
        !any_evictable(s, NULL)) {
        evconnlistener_disable(evhttp_bound_socket_get_listener(s->bound));
        s->paused = true;
    }
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    resume_listener(arg);
}

static void conn_release(conn_t *c)
{
    c->srv->body_bytes -= c->reserved;
    c->reserved = 0;
}

static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg);

/* The connection is gone (evhttp freed it, or setup found it already freed). */
static void conn_closed(conn_t *c)
{
    http_server_t *s = c->srv;
    if (c->closed)
        return;
    c->closed = true;
    c->evcon = NULL;
    if (c->job) { /* evhttp frees the request with the connection */
        c->job->r.req = NULL;
        c->job->conn = NULL;
        c->job = NULL;
    }
    event_del(&c->deadline_ev);
    evbuffer_remove_cb(bufferevent_get_input(c->io), on_input, c);
    conn_release(c);
    for (conn_t **p = &s->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    c->next = s->dead;
    s->dead = c;
    s->n_conns--;
    resume_listener(s);
    event_active(&s->reap_ev, EV_TIMEOUT, 0); /* never free c inside its own callback */
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    conn_closed(arg);
}

static void on_setup(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_t *c = arg;
    bufferevent_data_cb rd, wr;
    bufferevent_event_cb ev;
    void *cbarg = NULL;
    bufferevent_getcb(c->bev, &rd, &wr, &ev, &cbarg);
    if ((rd || wr || ev) && cbarg && !c->closed) { /* bufferevent_free clears them: still open */
        c->evcon = cbarg;
        evhttp_connection_set_closecb(c->evcon, on_conn_close, c);
    } else {
        conn_closed(c);
    }
    struct bufferevent *bev = c->bev;
    c->bev = NULL;
    bufferevent_decref(bev);
}

/* A head or body that has not arrived in time, a kept-alive connection left idle, or the end
 * of a refused request's linger. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_t *c = arg;
    struct evhttp_connection *evcon = conn_evcon(c);
    if (evcon && (c->stage == STAGE_BODY || (c->stage == STAGE_HEAD && c->head_len > 0)))
        c->srv->timed_out++; /* not an idle kept-alive connection: a request cut off */
    if (evcon)
        evhttp_connection_free(evcon); /* calls on_conn_close */
    else if (!c->closed)
        conn_arm(c, 1); /* evhttp takes the bufferevent on this loop turn */
}

static void conn_free(conn_t *c)
{
    if (c->bev) /* evicted before its setup */
        bufferevent_decref(c->bev);
    event_del(&c->setup_ev);
    event_del(&c->deadline_ev);
    free(c->head);
    if (c->held)
        evbuffer_free(c->held);
    free(c);
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_server_t *s = arg;
    while (s->dead) {
        conn_t *c = s->dead;
        s->dead = c->next;
        conn_free(c);
    }
}

/* The statuses a head is refused with, in the order of http_server_t.refused (then "other"). */
static const int refusal_codes[HTTP_REFUSAL_CODES] = {400, 401, 403, 413, 417, 431, 501, 503, 505};

static const char *status_text(int code)
{
    switch (code) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/* Drop what the input holds, without telling on_input. */
static void conn_drain(conn_t *c, struct evbuffer *in)
{
    c->feeding = true;
    evbuffer_drain(in, evbuffer_get_length(in));
    c->feeding = false;
}

/*
 * Answer a request refused on its head, from here: evhttp has not seen the whole head and never
 * will. The answer is small and the socket's buffer empty (nothing is in flight in the HEAD
 * stage), so one send writes it. Then the connection closes after a linger.
 */
static void conn_refuse(conn_t *c, const http_refusal_t *why)
{
    size_t k = 0;
    while (k < HTTP_REFUSAL_CODES && refusal_codes[k] != why->code)
        k++;
    c->srv->refused[k]++;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(why->error));
    json_object_object_add(o, "detail", json_object_new_string(why->detail));
    const char *body = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "{}";
    char msg[1024];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: "
                     "no-store\r\nConnection: close\r\n%s%sContent-Length: %zu\r\n\r\n%s",
                     why->code, status_text(why->code),
                     why->code == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
                     why->code == 503 ? "Retry-After: 1\r\n" : "", strlen(body), body);
    json_object_put(o);
    evutil_socket_t fd = bufferevent_getfd(c->io);
    if (fd >= 0 && n > 0) {
        (void)send(fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)shutdown(fd, SHUT_WR);
    }
    c->stage = STAGE_DISCARD;
    free(c->head);
    c->head = NULL;
    c->head_len = 0;
    conn_drain(c, bufferevent_get_input(c->io));
    conn_arm(c, LINGER_S);
    char code[8];
    snprintf(code, sizeof code, "%d", why->code);
    log_kv(LOG_DEBUG, "http request refused on its head", "server", c->srv->name, "code", code,
           "error", why->error, "detail", why->detail, NULL);
}

/* A whole head: parsed, past the gate, within the body limit and the budget, or refused. */
static void head_done(conn_t *c)
{
    http_server_t *s = c->srv;
    http_head_t h;
    http_refusal_t why;
    int rc = http_head_parse(c->head, c->head_len, &h, &why);
    if (rc == 0 && s->gate)
        rc = s->gate(&h, s->gate_arg, &why);
    if (rc == 0 && h.content_length > s->limits.max_body_bytes) {
        rc = -1;
        why = (http_refusal_t){413, "payload_too_large", ""};
        snprintf(why.detail, sizeof why.detail, "Content-Length is %zu; the limit is %zu",
                 h.content_length, s->limits.max_body_bytes);
    }
    if (rc == 0 && h.content_length > s->limits.body_budget_bytes - s->body_bytes) {
        rc = -1;
        why = (http_refusal_t){503, "busy",
                               "the server holds as many bodies as it may; retry "
                               "after 1 s"};
    }
    if (rc != 0) {
        conn_refuse(c, &why);
        return;
    }
    free(c->head);
    c->head = NULL;
    c->head_len = 0;
    c->head_armed = false;
    c->reserved = h.content_length;
    s->body_bytes += c->reserved;
    c->body_left = h.content_length;
    c->stage = c->body_left ? STAGE_BODY : STAGE_HELD;
    pause_if_full(s);
    if (c->body_left)
        conn_arm(c, s->limits.body_timeout_s);
    else
        event_del(&c->deadline_ev); /* answering: the handler's own bounds apply */
}

/* Take head bytes from in[pos, end); the position after those taken. */
static size_t read_head(conn_t *c, struct evbuffer *in, size_t pos, size_t end)
{
    http_server_t *s = c->srv;
    size_t max = s->limits.max_header_bytes;
    if (!c->head && !(c->head = malloc(max))) {
        http_refusal_t why = {503, "busy", "out of memory"};
        conn_refuse(c, &why);
        return end;
    }
    if (!c->head_armed) {
        conn_arm(c, s->limits.header_timeout_s);
        c->head_armed = true;
    }
    size_t n = end - pos < max - c->head_len ? end - pos : max - c->head_len;
    struct evbuffer_ptr at;
    (void)evbuffer_ptr_set(in, &at, pos, EVBUFFER_PTR_SET);
    (void)evbuffer_copyout_from(in, &at, c->head + c->head_len, n);
    size_t from = c->head_len > 3 ? c->head_len - 3 : 0, total = c->head_len + n;
    size_t head_end = total; /* past the empty line that ends the head, when it came */
    bool whole = false;
    for (size_t i = from; !whole && i + 4 <= total; i++)
        if (!memcmp(c->head + i, "\r\n\r\n", 4)) {
            head_end = i + 4;
            whole = true;
        }
    /* evhttp also ends a line at a bare LF: refuse one before evhttp takes it for a head's end.
     * Only the head's bytes: what follows it in the same read is the body, which may hold any. */
    for (size_t i = c->head_len; i < head_end; i++)
        if (c->head[i] == '\n' && (i == 0 || c->head[i - 1] != '\r')) {
            http_refusal_t why = {400, "bad_request", "a line does not end with CRLF"};
            conn_refuse(c, &why);
            return end;
        }
    if (whole) {
        size_t used = head_end - c->head_len;
        c->head_len = head_end;
        head_done(c);
        return pos + used;
    }
    c->head_len = total;
    if (c->head_len == max) {
        http_refusal_t why = {431, "header_too_large", ""};
        snprintf(why.detail, sizeof why.detail, "the request line and headers exceed %zu bytes",
                 max);
        conn_refuse(c, &why);
        return end;
    }
    return end;
}

/* Keep in[pos, end) for later, in order, out of evhttp's sight. */
static void hold(conn_t *c, struct evbuffer *in, size_t pos)
{
    struct evbuffer *front = evbuffer_new();
    if (!c->held)
        c->held = evbuffer_new();
    if (!front || !c->held) {
        if (front)
            evbuffer_free(front);
        http_refusal_t why = {503, "busy", "out of memory"};
        conn_refuse(c, &why);
        return;
    }
    c->feeding = true;
    (void)evbuffer_remove_buffer(in, front, pos);
    (void)evbuffer_add_buffer(c->held, in);
    (void)evbuffer_prepend_buffer(in, front); /* a socket's input takes bytes at its end only
                                                 while it reads */
    c->feeding = false;
    evbuffer_free(front);
    bufferevent_disable(c->io, EV_READ); /* until the answer is out: evhttp enables it again */
}

/*
 * Every byte read, before evhttp sees it. Heads are checked whole here, so that a refused
 * request never reaches evhttp: no body is read for it and nothing is buffered beyond its head.
 */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
    conn_t *c = arg;
    if (c->closed || c->feeding || info->n_added == 0)
        return;
    size_t end = evbuffer_get_length(in), pos = end - info->n_added;
    while (pos < end && !c->closed) {
        switch (c->stage) {
        case STAGE_HEAD: pos = read_head(c, in, pos, end); break;
        case STAGE_BODY: {
            size_t n = end - pos < c->body_left ? end - pos : c->body_left;
            pos += n;
            c->body_left -= n;
            if (!c->body_left) {
                c->stage = STAGE_HELD;
                event_del(&c->deadline_ev);
            }
            break;
        }
        case STAGE_HELD: hold(c, in, pos); return;
        case STAGE_DISCARD: conn_drain(c, in); return;
        }
    }
}

/* The answer to a request is out: its body budget is free and the next request may come. */
static void on_complete(struct evhttp_request *req, void *arg)
{
    (void)req;
    conn_t *c = arg;
    if (c->closed || c->stage == STAGE_DISCARD)
        return;
    conn_release(c);
    c->stage = STAGE_HEAD;
    c->head_armed = false;
    c->waiting_since_ms = now_mono_ms();
    resume_listener(c->srv);
    conn_arm(c, c->srv->limits.idle_timeout_s);
    /* Into the input, empty now (evhttp has read the request, the rest is held), through
     * on_input; at its front, as a socket's input takes bytes at its end only while it reads. */
    if (c->held && evbuffer_get_length(c->held) > 0)
        (void)evbuffer_prepend_buffer(bufferevent_get_input(c->io), c->held);
}

static struct bufferevent *on_accept(struct event_base *base, void *arg)
{
    http_server_t *s = arg;
    struct bufferevent *bev = s->tls ? http_tls_accept(base, s->tls) : NULL;
    /* Out of memory for TLS: a plain bufferevent that reads nothing into evhttp (discarded) and
     * closes at once, never plain HTTP on an HTTPS port. */
    bool refuse = s->tls && !bev;
    if (!bev)
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    conn_t *c = calloc(1, sizeof *c);
    if (!bev || !c || !evbuffer_add_cb(bufferevent_get_input(bev), on_input, c)) {
        /* Out of memory: evhttp makes a bufferevent of its own for this connection, which is
         * neither bounded nor checked; rare enough not to refuse the connection for. */
        free(c);
        if (bev)
            bufferevent_free(bev);
        return NULL;
    }
    c->srv = s;
    c->bev = bev;
    c->io = bev;
    bufferevent_incref(bev);
    evtimer_assign(&c->setup_ev, base, on_setup, c);
    evtimer_assign(&c->deadline_ev, base, on_deadline, c);
    (void)evloop_arm(&c->setup_ev, 0);
    conn_arm(c, refuse ? 0 : s->limits.header_timeout_s);
    c->head_armed = true;
    if (refuse)
        c->stage = STAGE_DISCARD;
    c->waiting_since_ms = now_mono_ms();
    c->next = s->conns;
    s->conns = c;
    bool evicted = ++s->n_conns > (size_t)s->limits.max_connections && evict_one(s, c);
    if (s->n_conns >= (size_t)s->limits.max_connections && s->bound && !s->paused &&
        (evicted || !any_evictable(s, c))) {
        evconnlistener_disable(evhttp_bound_socket_get_listener(s->bound));
        s->paused = true;
    }
    /* One eviction per loop turn: the connections accepted in a burst have their heads read
     * before the next burst, so a probe is never closed for clients that came after it. */
    if (evicted)
        event_active(&s->resume_ev, EV_TIMEOUT, 0);
    return bev;
}

/* ---- dispatch ---- */

static int method_of(struct evhttp_request *req)
{
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET: return HTTP_GET;
    case EVHTTP_REQ_POST: return HTTP_POST;
    case EVHTTP_REQ_PATCH: return HTTP_PATCH;
    default: return 0;
    }
}

static void job_free(http_job_t *j)
{
    if (j->conn)
        j->conn->job = NULL;
    evhttp_clear_headers(&j->r.query);
    free(j->path);
    free(j->body);
    free(j);
}

static void run_job(void *arg)
{
    http_job_t *j = arg;
    j->route->fn(&j->r, j->route->arg);
    if (!j->r.replied)
        http_error(&j->r, 500, "internal", "the handler gave no answer");
    job_free(j);
}

/*
 * The route's handler on a fiber: the request's path, body and query move into a job (*path and
 * *body become NULL: the job owns them). 503 when no fiber can be had.
 */
static void start_job(http_server_t *s, conn_t *c, http_req_t *r, const route_t *rt, char **path,
                      char **body, const char *query)
{
    http_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        http_error(r, 503, "unavailable", "out of memory");
        return;
    }
    j->r = (http_req_t){
        .req = r->req, .method = r->method, .body = r->body, .body_len = r->body_len};
    TAILQ_INIT(&j->r.query);
    if (query)
        (void)evhttp_parse_query_str(query, &j->r.query); /* parsed once already */
    j->path = *path;
    j->body = *body;
    j->r.path = j->path;
    j->route = rt;
    (void)http_route_match(rt->pattern, j->path, j->r.params, j->pbuf, sizeof j->pbuf);
    if (fiber_start(s->base, "http", run_job, j) != 0) {
        evhttp_clear_headers(&j->r.query);
        free(j);
        http_error(r, 503, "unavailable", "out of memory");
        return;
    }
    *path = NULL;
    *body = NULL;
    j->conn = c;
    if (c)
        c->job = j;
}

static void dispatch(http_req_t *r, http_server_t *s, conn_t *c, char **path, char **body,
                     const char *query)
{
    bool path_known = false;
    char allow[32] = "", pbuf[PATH_MAX_BYTES];
    for (size_t i = 0; i < s->n_routes; i++) {
        route_t *rt = &s->routes[i];
        if (!http_route_match(rt->pattern, r->path, r->params, pbuf, sizeof pbuf))
            continue;
        path_known = true;
        if ((rt->methods & r->method) && r->query.tqh_first &&
            !((rt->methods & HTTP_QUERY) && r->method == HTTP_GET)) {
            http_error(r, 400, "bad_request", "unknown query parameter '%.64s'",
                       r->query.tqh_first->key);
            return;
        }
        if (rt->methods & r->method) {
            if (rt->methods & HTTP_WAITS) {
                start_job(s, c, r, rt, path, body, query);
                /* r->params point into pbuf, but nothing reads them after dispatch() returns:
                 * the job matched again into its own buffer (start_job), and on_request reads no
                 * param. NOLINTNEXTLINE(clang-analyzer-core.StackAddressEscape) */
                return;
            }
            rt->fn(r, rt->arg);
            if (!r->replied)
                http_error(r, 500, "internal", "the handler gave no answer");
            return;
        }
        static const char *const names[] = {"GET", "POST", "PATCH"};
        size_t o = 0;
        allow[0] = '\0';
        for (int m = 0; m < 3 && o < sizeof allow; m++)
            if (rt->methods & (1 << m))
                o += (size_t)snprintf(allow + o, sizeof allow - o, "%s%s", o ? ", " : "", names[m]);
    }
    if (!path_known) {
        http_error(r, 404, "not_found", "no such path");
        return;
    }
    http_add_header(r, "Allow", allow);
    http_error(r, 405, "method_not_allowed", "allowed: %s", allow);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    http_server_t *s = arg;
    conn_t *c = conn_of(s, evhttp_request_get_connection(req));
    if (c)
        evhttp_request_set_on_complete_cb(req, on_complete, c);
    http_req_t r = {.req = req, .method = method_of(req), .body = ""};
    TAILQ_INIT(&r.query);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *raw_path = uri ? evhttp_uri_get_path(uri) : NULL;
    char *path = raw_path ? evhttp_uridecode(raw_path, 0, NULL) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    char *body = NULL;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if (!path || strlen(path) >= PATH_MAX_BYTES) {
        http_error(&r, 400, "bad_request", "the path is missing, malformed or too long");
    } else if (query && evhttp_parse_query_str(query, &r.query) != 0) {
        http_error(&r, 400, "bad_request", "malformed query string");
    } else if (len > s->limits.max_body_bytes) {
        http_error(&r, 413, "payload_too_large", "the body has %zu bytes; the limit is %zu", len,
                   s->limits.max_body_bytes);
    } else if (!r.method) {
        http_add_header(&r, "Allow", "GET, POST");
        http_error(&r, 405, "method_not_allowed", "only GET and POST are served");
    } else if (!(body = malloc(len + 1))) {
        http_error(&r, 503, "unavailable", "out of memory");
    } else {
        evbuffer_copyout(in, body, len);
        body[len] = '\0';
        r.body = body;
        r.body_len = len;
        r.path = path;
        dispatch(&r, s, c, &path, &body, query);
    }
    free(body);
    free(path);
    evhttp_clear_headers(&r.query);
}

/* ---- life ---- */

http_server_t *http_new(struct event_base *base, const char *name, const http_limits_t *limits)
{
    http_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base = base;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->limits = *limits;
    if (s->limits.max_connections < 1)
        s->limits.max_connections = 1;
    if (s->limits.max_header_bytes < 64)
        s->limits.max_header_bytes = 64;
    if (s->limits.body_budget_bytes < s->limits.max_body_bytes) /* one body at least */
        s->limits.body_budget_bytes = s->limits.max_body_bytes;
    if (s->limits.header_timeout_s < 1)
        s->limits.header_timeout_s = 1;
    if (s->limits.body_timeout_s < 1)
        s->limits.body_timeout_s = 1;
    s->http = evhttp_new(base);
    if (!s->http) {
        free(s);
        return NULL;
    }
    event_assign(&s->reap_ev, base, -1, 0, on_reap, s);
    event_assign(&s->resume_ev, base, -1, 0, on_resume, s);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_OPTIONS);
    /* on_input refuses larger heads and bodies first, before evhttp reads them, with a JSON
     * error; evhttp's own limits are a second line that is never reached. */
    evhttp_set_max_headers_size(s->http, (ev_ssize_t)(2 * limits->max_header_bytes));
    evhttp_set_max_body_size(s->http, (ev_ssize_t)limits->max_body_bytes);
    evhttp_set_timeout(s->http, limits->read_timeout_s);
    evhttp_set_bevcb(s->http, on_accept, s);
    evhttp_set_gencb(s->http, on_request, s);
    return s;
}

void http_free(http_server_t *s)
{
    if (!s)
        return;
    s->bound = NULL;                 /* evhttp_free frees the listener: nothing may resume it */
    evhttp_free(s->http);            /* frees every connection: on_conn_close moves them to dead */
    for (conn_t *c = s->conns; c;) { /* those evhttp had not taken yet */
        conn_t *next = c->next;
        evbuffer_remove_cb(bufferevent_get_input(c->io), on_input, c);
        conn_free(c); /* and its reference to the bufferevent */
        c = next;
    }
    s->conns = NULL;
    on_reap(-1, 0, s);
    event_del(&s->reap_ev);
    event_del(&s->resume_ev);
    http_tls_free(s->tls);
    free(s);
}

void http_set_tls(http_server_t *s, http_tls_t *t)
{
    http_tls_free(s->tls);
    s->tls = t;
}

bool http_tls_on(const http_server_t *s)
{
    return s && s->tls;
}

void http_set_gate(http_server_t *s, http_gate_fn fn, void *arg)
{
    s->gate = fn;
    s->gate_arg = arg;
}

int http_route(http_server_t *s, int methods, const char *pattern, http_handler_fn fn, void *arg)
{
    if (s->n_routes == MAX_ROUTES || strlen(pattern) >= sizeof s->routes[0].pattern)
        return -1;
    route_t *r = &s->routes[s->n_routes++];
    r->methods = methods;
    snprintf(r->pattern, sizeof r->pattern, "%s", pattern);
    r->fn = fn;
    r->arg = arg;
    return 0;
}

int http_listen(http_server_t *s, const char *hostport, char *err, size_t errlen)
{
    char host[256];
    int port;
    if (http_split_hostport(hostport, host, sizeof host, &port) != 0) {
        snprintf(err, errlen, "'%.200s' is not host:port", hostport);
        return -1;
    }
    s->bound = evhttp_bind_socket_with_handle(s->http, *host ? host : "0.0.0.0", (uint16_t)port);
    if (!s->bound) {
        snprintf(err, errlen, "cannot listen on %.200s: %s", hostport, strerror(errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    evutil_socket_t fd = evhttp_bound_socket_get_fd(s->bound);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        /* getsockname() filled ss, which clang-tidy does not model:
         * NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult) */
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    char address[300], p[16];
    snprintf(p, sizeof p, "%d", s->port);
    snprintf(address, sizeof address, "%s%s%s:%d", strchr(host, ':') ? "[" : "", host,
             strchr(host, ':') ? "]" : "", s->port);
    log_kv(LOG_INFO, "http listening", "server", s->name, "address", address, "port", p, "tls",
           s->tls ? "on" : "off", NULL);
    return 0;
}

int http_port(const http_server_t *s)
{
    return s->port;
}

size_t http_connections(const http_server_t *s)
{
    return s->n_conns;
}

void http_metrics_clients(metrics_out_t *o, const http_server_t *s, const char *listen_key)
{
    char help[160];
    snprintf(help, sizeof help,
             "Connections to %s closed at the limit for a new one (a slow head or an idle "
             "connection)",
             listen_key);
    metrics_family(o, "warren_http_evicted_total", "counter", help);
    metrics_sample_u64(o, "warren_http_evicted_total", "", s ? s->evicted : 0);
    snprintf(help, sizeof help,
             "Connections to %s closed because a request's head or body did not arrive in time",
             listen_key);
    metrics_family(o, "warren_http_timed_out_total", "counter", help);
    metrics_sample_u64(o, "warren_http_timed_out_total", "", s ? s->timed_out : 0);
    snprintf(help, sizeof help,
             "Requests to %s refused on their heads (no body read), by status; each answered "
             "with a JSON error",
             listen_key);
    metrics_family(o, "warren_http_refused_total", "counter", help);
    for (size_t k = 0; k <= HTTP_REFUSAL_CODES; k++) {
        char code[8], labels[32] = "";
        snprintf(code, sizeof code, "%d", k < HTTP_REFUSAL_CODES ? refusal_codes[k] : 0);
        (void)metrics_label(labels, sizeof labels, "code", k < HTTP_REFUSAL_CODES ? code : "other");
        if (s && s->refused[k])
            metrics_sample_u64(o, "warren_http_refused_total", labels, s->refused[k]);
    }
}
