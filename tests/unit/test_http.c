/* The HTTP server's pure parts: addresses, routes, the constant-time compare. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_hostport),
        cmocka_unit_test(test_route_match),
        cmocka_unit_test(test_secret_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
