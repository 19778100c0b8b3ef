/* The strict reading of a request head (request line and headers) before evhttp sees it. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "warren/http.h"

static int refuse(http_refusal_t *why, int code, const char *error, const char *detail)
{
    why->code = code;
    why->error = error;
    snprintf(why->detail, sizeof why->detail, "%s", detail);
    return -1;
}

static bool is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_tchar(unsigned char c)
{
    return is_alnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* RFC 3986 origin-form: "/" then pchar, "/", "?" and percent-escapes only; the path part may not
 * decode to a control character (NUL included). */
static int check_target(const char *t, http_refusal_t *why)
{
    if (t[0] != '/')
        return refuse(why, 400, "bad_request", "the request target is not a path");
    bool in_query = false;
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        if (*p == '%') {
            int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
            if (lo < 0)
                return refuse(why, 400, "bad_request", "a malformed percent-escape in the target");
            int v = hi * 16 + lo;
            if (!in_query && (v < 0x20 || v == 0x7f))
                return refuse(why, 400, "bad_request", "a control character in the path");
            p += 2;
        } else if (*p == '?') {
            in_query = true;
        } else if (!(is_alnum(*p) || strchr("-._~!$&'()*+,;=:@/", *p))) {
            return refuse(why, 400, "bad_request", "a character the target may not hold");
        }
    }
    return 0;
}

static int request_line(char *line, http_head_t *h, http_refusal_t *why)
{
    char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strchr(sp2 + 1, ' '))
        return refuse(why, 400, "bad_request", "the request line is not METHOD TARGET VERSION");
    *sp1 = *sp2 = '\0';
    for (char *m = line; *m; m++)
        if (*m < 'A' || *m > 'Z')
            return refuse(why, 400, "bad_request", "the method is not a token");
    static const struct {
        const char *name;
        int method;
    } known[] = {{"GET", HTTP_GET}, {"POST", HTTP_POST}, {"PATCH", HTTP_PATCH}, {"HEAD", 0},
                 {"PUT", 0},        {"DELETE", 0},       {"OPTIONS", 0}};
    size_t i = 0, n = sizeof known / sizeof *known;
    while (i < n && strcmp(line, known[i].name))
        i++;
    if (i == n)
        return refuse(why, 501, "not_implemented", "the method is not one this server knows");
    h->method = known[i].method;
    h->no_body = !strcmp(line, "HEAD");
    h->target = sp1 + 1;
    if (!strcmp(sp2 + 1, "HTTP/1.1"))
        h->http11 = true;
    else if (strcmp(sp2 + 1, "HTTP/1.0"))
        return refuse(why, 505, "http_version_not_supported", "HTTP/1.1 or HTTP/1.0 only");
    return check_target(h->target, why);
}

static int content_length(const char *v, http_head_t *h, http_refusal_t *why)
{
    if (h->has_length)
        return refuse(why, 400, "bad_request", "Content-Length is given more than once");
    size_t n = strlen(v);
    if (n == 0 || n > 15 || strspn(v, "0123456789") != n)
        return refuse(why, 400, "bad_request", "Content-Length is not a decimal number");
    h->has_length = true;
    h->content_length = 0;
    for (const char *p = v; *p; p++)
        h->content_length = h->content_length * 10 + (size_t)(*p - '0');
    return 0;
}

static int header(char *line, http_head_t *h, http_refusal_t *why)
{
    char *colon = strchr(line, ':');
    if (line[0] == ' ' || line[0] == '\t')
        return refuse(why, 400, "bad_request", "a folded header line");
    if (!colon || colon == line)
        return refuse(why, 400, "bad_request", "a header line without a name");
    *colon = '\0';
    for (char *c = line; *c; c++)
        if (!is_tchar((unsigned char)*c))
            return refuse(why, 400, "bad_request", "a header name that is not a token");
    char *v = colon + 1, *end = v + strlen(v);
    while (*v == ' ' || *v == '\t')
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
            return refuse(why, 400, "bad_request", "a control character in a header value");
    if (!strcasecmp(line, "Content-Length"))
        return content_length(v, h, why);
    if (!strcasecmp(line, "Transfer-Encoding"))
        h->has_encoding = true;
    else if (!strcasecmp(line, "Host")) {
        if (h->has_host)
            return refuse(why, 400, "bad_request", "Host is given more than once");
        h->has_host = true;
    } else if (!strcasecmp(line, "Expect") && strcasecmp(v, "100-continue"))
        return refuse(why, 417, "expectation_failed", "Expect: 100-continue is the one known");
    else if (!strcasecmp(line, "Authorization") && !h->authorization)
        h->authorization = v;
    else if (!strcasecmp(line, "X-API-Key") && !h->api_key)
        h->api_key = v;
    return 0;
}

int http_head_parse(char *buf, size_t len, http_head_t *h, http_refusal_t *why)
{
    *h = (http_head_t){0};
    if (len < 4 || memcmp(buf + len - 4, "\r\n\r\n", 4))
        return refuse(why, 400, "bad_request", "the head does not end with an empty line");
    if (memchr(buf, '\0', len))
        return refuse(why, 400, "bad_request", "a NUL byte in the head");
    buf[len - 2] = '\0';
    /* Every line ends with CRLF: a lone CR or LF is refused, as proxies may split on either. */
    bool first = true;
    for (char *line = buf; *line;) {
        char *crlf = strstr(line, "\r\n");
        size_t n = crlf ? (size_t)(crlf - line) : 0;
        if (!crlf || memchr(line, '\r', n) || memchr(line, '\n', n))
            return refuse(why, 400, "bad_request", "a line does not end with CRLF");
        *crlf = '\0';
        if (first ? request_line(line, h, why) != 0 : header(line, h, why) != 0)
            return -1;
        first = false;
        line = crlf + 2;
    }
    if (h->has_encoding)
        return refuse(why, h->has_length ? 400 : 501,
                      h->has_length ? "bad_request" : "not_implemented",
                      "Transfer-Encoding is not supported: send Content-Length");
    if (h->no_body && h->content_length > 0)
        return refuse(why, 400, "bad_request", "HEAD takes no body");
    if (h->http11 && !h->has_host)
        return refuse(why, 400, "bad_request", "an HTTP/1.1 request without Host");
    return 0;
}
