/* The HTTP server's pure parts: addresses, routes, the constant-time compare, request heads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "warren/http.h"

static void test_split_hostport(void **state)
{
    (void)state;
    char host[64];
    int port;
    assert_int_equal(http_split_hostport("127.0.0.1:8080", host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(http_split_hostport(":9464", host, sizeof host, &port), 0);
    assert_string_equal(host, "");
    assert_int_equal(port, 9464);
    assert_int_equal(http_split_hostport("[::1]:0", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
    const char *bad[] = {"127.0.0.1", "127.0.0.1:", "h:65536", "h:-1",
                         "h:8o",      "::1:80",     "[::1]80", "h:123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(http_split_hostport(bad[i], host, sizeof host, &port), -1);
    char tiny[4];
    assert_int_equal(http_split_hostport("localhost:1", tiny, sizeof tiny, &port), -1);
}

static void test_route_match(void **state)
{
    (void)state;
    const char *p[HTTP_MAX_PARAMS];
    char buf[64];
    const char *pat = "/api/v1/executions/{}/cancel";
    assert_true(http_route_match(pat, "/api/v1/executions/42/cancel", p, buf, sizeof buf));
    assert_string_equal(p[0], "42");
    assert_false(http_route_match(pat, "/api/v1/executions//cancel", p, buf, sizeof buf));
    assert_false(http_route_match(pat, "/api/v1/executions/42", p, buf, sizeof buf));
    assert_false(http_route_match(pat, "/api/v1/executions/42/cancel/x", p, buf, sizeof buf));
    assert_false(http_route_match(pat, "/api/v1/executions/42/cancel/", p, buf, sizeof buf));
    assert_true(http_route_match("/livez", "/livez", p, buf, sizeof buf));
    assert_false(http_route_match("/livez", "/livezz", p, buf, sizeof buf));
    assert_false(http_route_match("/livez", "livez", p, buf, sizeof buf));
    assert_true(http_route_match("/a/{}/b/{}", "/a/x/b/y", p, buf, sizeof buf));
    assert_string_equal(p[0], "x");
    assert_string_equal(p[1], "y");
    char small[3];
    assert_false(http_route_match("/a/{}", "/a/xyz", p, small, sizeof small));
}

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(http_secret_equal("0123456789abcdef", "0123456789abcdef"));
    assert_false(http_secret_equal("0123456789abcdeF", "0123456789abcdef"));
    assert_false(http_secret_equal("0123456789abcde", "0123456789abcdef"));
    assert_false(http_secret_equal("0123456789abcdef0", "0123456789abcdef"));
    assert_false(http_secret_equal("", "0123456789abcdef"));
    assert_false(http_secret_equal("0123456789abcdef", ""));
    assert_true(http_secret_equal("", ""));
}

/* The status http_head_parse gives head (0 when it accepts it), with h filled. */
static int head_status(const char *head, http_head_t *h)
{
    char buf[1024];
    size_t len = strlen(head);
    http_refusal_t why = {0};
    assert_true(len < sizeof buf);
    memcpy(buf, head, len + 1);
    if (http_head_parse(buf, len, h, &why) == 0)
        return 0;
    assert_non_null(why.error);
    assert_true(why.detail[0] != '\0');
    return why.code;
}

static void test_head_accepted(void **state)
{
    (void)state;
    http_head_t h;
    assert_int_equal(0, head_status("POST /api/v1/executions?x=%41 HTTP/1.1\r\nHost: a\r\n"
                                    "X-API-Key:  k1 \r\nAuthorization: Bearer t\r\n"
                                    "Content-Length: 12\r\n\r\n",
                                    &h));
    assert_int_equal(HTTP_POST, h.method);
    assert_string_equal("/api/v1/executions?x=%41", h.target);
    assert_true(h.http11 && h.has_host && h.has_length);
    assert_int_equal(12, h.content_length);
    assert_string_equal("k1", h.api_key);
    assert_string_equal("Bearer t", h.authorization);
    assert_int_equal(0, head_status("GET /livez HTTP/1.0\r\n\r\n", &h));
    assert_false(h.http11 || h.has_length);
    assert_int_equal(0, head_status("PUT / HTTP/1.1\r\nHost: a\r\n\r\n", &h));
    assert_int_equal(0, h.method);
}

static void test_head_refused(void **state)
{
    (void)state;
    http_head_t h;
    static const struct {
        int code;
        const char *head;
    } cases[] = {
        {400, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"},
        {400, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\ncontent-length: 2\r\n\r\n"},
        {400, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n"},
        {400, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"},
        {400,
         "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n"},
        {501, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"},
        {400, "GET / HTTP/1.1\r\n\r\n"},
        {400, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"},
        {400, "GET /a%00 HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET /a%1f HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET /a%7F HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET /a%2 HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "GET / HTTP/1.1\nHost: a\r\n\r\n"},
        {400, "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n"},
        {400, "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"},
        {400, "GET / HTTP/1.1\r\nHost : a\r\n\r\n"},
        {400, "GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n"},
        {400, "GET  / HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "get / HTTP/1.1\r\nHost: a\r\n\r\n"},
        {400, "HEAD / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n"},
        {501, "TRACE / HTTP/1.1\r\nHost: a\r\n\r\n"},
        {501, "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n"},
        {501, "BREW / HTTP/1.1\r\nHost: a\r\n\r\n"},
        {505, "GET / HTTP/2.0\r\nHost: a\r\n\r\n"},
        {417, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n"},
        {400, "\r\n\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        print_message("%s\n", cases[i].head);
        assert_int_equal(cases[i].code, head_status(cases[i].head, &h));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_hostport), cmocka_unit_test(test_route_match),
        cmocka_unit_test(test_secret_equal),   cmocka_unit_test(test_head_accepted),
        cmocka_unit_test(test_head_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
