/* Minimal HTTP/1.0 GET over plain TCP, enough to read the RabbitMQ management API. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mq/http_get.h"
#include "warren/config.h"

/* ---- URL ---- */

static int hexval(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* Percent-decode s[0..n) into dst[cap]; -1 on a bad escape or overflow. */
static int pct_decode(const char *s, size_t n, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hexval((unsigned char)s[i + 1]), lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        dst[o++] = (char)c;
    }
    dst[o] = '\0';
    return 0;
}

static int copy_span(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* host[:port] or [v6]:port from s[0..n). */
static int parse_hostport(const char *s, size_t n, http_url_t *u)
{
    const char *end = s + n, *colon;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || copy_span(u->host, sizeof u->host, s + 1, (size_t)(close - s - 1)) != 0)
            return -1;
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
        if (!colon && close + 1 != end)
            return -1;
    } else {
        colon = memchr(s, ':', n);
        if (copy_span(u->host, sizeof u->host, s, colon ? (size_t)(colon - s) : n) != 0)
            return -1;
    }
    if (!u->host[0])
        return -1;
    if (!colon)
        return copy_span(u->port, sizeof u->port, "80", 2);
    size_t plen = (size_t)(end - colon - 1);
    if (plen == 0 || plen > 5 || strspn(colon + 1, "0123456789") < plen)
        return -1;
    return copy_span(u->port, sizeof u->port, colon + 1, plen);
}

int http_url_parse(const char *url, http_url_t *u, char *err, size_t errlen)
{
    static const char scheme[] = "http://";
    memset(u, 0, sizeof *u);
    if (strncasecmp(url, scheme, sizeof scheme - 1) != 0) {
        char *shown = cfg_mask_url(url);
        snprintf(err, errlen, "management URL '%s' must start with http:// (no TLS support)",
                 shown ? shown : "?");
        free(shown);
        return -1;
    }
    const char *auth = url + sizeof scheme - 1;
    const char *path = auth + strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', (size_t)(path - auth));
    const char *host = at ? at + 1 : auth;
    size_t blen = strcspn(path, "?#");
    while (blen > 0 && path[blen - 1] == '/')
        blen--;
    if ((at && pct_decode(auth, (size_t)(at - auth), u->auth, sizeof u->auth) != 0) ||
        parse_hostport(host, (size_t)(path - host), u) != 0 ||
        copy_span(u->base, sizeof u->base, path, blen) != 0) {
        snprintf(err, errlen,
                 "management URL is malformed (expected http://[user:pass@]host[:port])");
        return -1;
    }
    return 0;
}

/* ---- request and response text ---- */

static void base64(const char *in, char *out, size_t cap)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in), o = 0;
    for (size_t i = 0; i < n && o + 5 <= cap; i += 3) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        out[o++] = tbl[(v >> 18) & 63];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = (char)(i + 1 < n ? tbl[(v >> 6) & 63] : '=');
        out[o++] = (char)(i + 2 < n ? tbl[v & 63] : '=');
    }
    out[o] = '\0';
}

int http_build_request(const http_url_t *u, const char *path, char *buf, size_t len)
{
    char b64[360] = "";
    char authline[400] = "";
    if (u->auth[0]) {
        base64(u->auth, b64, sizeof b64);
        snprintf(authline, sizeof authline, "Authorization: Basic %s\r\n", b64);
    }
    bool v6 = strchr(u->host, ':') != NULL;
    int n = snprintf(buf, len,
                     "GET %s%s HTTP/1.0\r\nHost: %s%s%s:%s\r\n%sAccept: application/json\r\n"
                     "User-Agent: warren\r\n\r\n",
                     u->base, path, v6 ? "[" : "", u->host, v6 ? "]" : "", u->port, authline);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Value of header `name` within the header block hdr[0..n), or NULL. */
static const char *find_header(const char *hdr, size_t n, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *p = memchr(hdr, '\n', n), *end = hdr + n;
    while (p && p + 1 < end) {
        const char *line = p + 1;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && isspace((unsigned char)ve[-1]))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol < end ? eol : NULL;
    }
    return NULL;
}

/* "HTTP/1.x NNN" opening the header block hdr[0..n): the three-digit status, -1 when absent. */
static int status_code(const char *hdr, size_t n)
{
    int code = 0;
    if (n < 12 || strncmp(hdr, "HTTP/1.", 7) != 0 || hdr[8] != ' ')
        return -1;
    for (size_t i = 9; i < 12; i++) {
        if (!isdigit((unsigned char)hdr[i]))
            return -1;
        code = code * 10 + (hdr[i] - '0');
    }
    if (n > 12 && hdr[12] != ' ' && hdr[12] != '\r')
        return -1;
    return code >= 100 && code <= 599 ? code : -1;
}

/* A Content-Length value v[0..n): digits only, as RFC 9110 writes it; -1 for anything else. */
static long long content_length(const char *v, size_t n)
{
    long long len = 0;
    if (n == 0 || n > 18)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)v[i]))
            return -1;
        len = len * 10 + (v[i] - '0');
    }
    return len;
}

/* raw is not NUL-terminated (recv_all's buffer): every read stays within raw[0..len). */
int http_parse_response(const char *raw, size_t len, http_response_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *sep = memmem(raw, len, "\r\n\r\n", 4);
    int status = sep ? status_code(raw, (size_t)(sep - raw)) : -1;
    if (status < 0) {
        snprintf(err, errlen, "malformed HTTP response (%zu bytes)", len);
        return -1;
    }
    size_t hlen = (size_t)(sep - raw), vlen;
    const char *body = sep + 4;
    size_t blen = len - hlen - 4;
    const char *te = find_header(raw, hlen, "transfer-encoding", &vlen);
    if (te && !(vlen == 8 && !strncasecmp(te, "identity", 8))) {
        snprintf(err, errlen, "HTTP response uses transfer-encoding %.*s, not supported", (int)vlen,
                 te);
        return -1;
    }
    const char *cl = find_header(raw, hlen, "content-length", &vlen);
    long long clen = cl ? content_length(cl, vlen) : 0;
    if (cl && clen < 0) {
        snprintf(err, errlen, "HTTP response has an invalid content-length '%.*s'",
                 (int)(vlen > 40 ? 40 : vlen), cl);
        return -1;
    }
    if (cl && (size_t)clen != blen) {
        snprintf(err, errlen, "HTTP response body is %zu bytes, content-length says %.*s", blen,
                 (int)vlen, cl);
        return -1;
    }
    out->body = malloc(blen + 1);
    if (!out->body) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(out->body, body, blen);
    out->body[blen] = '\0';
    out->body_len = blen;
    out->status = status;
    return 0;
}

void http_response_free(http_response_t *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

/* ---- the socket ---- */

/* Wait for fd to become ready for `events` before the deadline. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - now_mono_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)left);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

static int connect_to(const http_url_t *u, int64_t deadline_ms, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    int gai = getaddrinfo(u->host, u->port, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", u->host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, soerr = 0;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        socklen_t sl = sizeof soerr;
        bool ok = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
                  (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline_ms) == 0 &&
                   getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0);
        if (!ok) {
            soerr = soerr ? soerr : errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to %s:%s: %s", u->host, u->port,
                 soerr ? strerror(soerr) : "timed out");
    return fd;
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline_ms)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1; /* NOLINT(bugprone-branch-clone): an error; the next one is a timeout */
        else if (wait_fd(fd, POLLOUT, deadline_ms) != 0)
            return -1;
    }
    return 0;
}

/* Read until the server closes (HTTP/1.0) into a malloc'd buffer. */
static char *recv_all(int fd, int64_t deadline_ms, size_t *len, char *err, size_t errlen)
{
    size_t cap = 16384, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *bigger = cap < HTTP_MAX_RESPONSE ? realloc(buf, cap * 2) : NULL;
            if (!bigger) {
                snprintf(err, errlen, "HTTP response larger than %d bytes", HTTP_MAX_RESPONSE);
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r == 0) {
            *len = n;
            return buf;
        }
        if (r > 0) {
            n += (size_t)r;
        } else if (errno == EAGAIN) {
            if (wait_fd(fd, POLLIN, deadline_ms) != 0) {
                snprintf(err, errlen, "reading the HTTP response: timed out");
                break;
            }
        } else if (errno != EINTR) {
            snprintf(err, errlen, "reading the HTTP response: %s", strerror(errno));
            break;
        }
    }
    free(buf);
    return NULL;
}

int http_get(const http_url_t *u, const char *path, int timeout_ms, http_response_t *out, char *err,
             size_t errlen)
{
    char req[2048];
    size_t len = 0;
    int64_t deadline = now_mono_ms() + timeout_ms;
    memset(out, 0, sizeof *out);
    if (http_build_request(u, path, req, sizeof req) != 0) {
        snprintf(err, errlen, "HTTP request for %s too long", path);
        return -1;
    }
    int fd = connect_to(u, deadline, err, errlen);
    if (fd < 0)
        return -1;
    char *raw = NULL;
    if (send_all(fd, req, strlen(req), deadline) != 0)
        snprintf(err, errlen, "sending the HTTP request to %s:%s failed", u->host, u->port);
    else
        raw = recv_all(fd, deadline, &len, err, errlen);
    close(fd);
    int rc = raw ? http_parse_response(raw, len, out, err, errlen) : -1;
    free(raw);
    return rc;
}
