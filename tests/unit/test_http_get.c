/* Unit tests for the tiny management-API HTTP client: URLs, request text, responses, a local server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mq/http_get.h"

static void test_url_parse(void **state)
{
    (void)state;
    http_url_t u;
    char err[ERRBUF_SIZE];
    assert_int_equal(http_url_parse("http://127.0.0.1:15672", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(u.port, "15672");
    assert_string_equal(u.auth, "");
    assert_string_equal(u.base, "");

    assert_int_equal(http_url_parse("HTTP://adm%40x:p%3Ass@rabbit/mgmt/", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "rabbit");
    assert_string_equal(u.port, "80");
    assert_string_equal(u.auth, "adm@x:p:ss");
    assert_string_equal(u.base, "/mgmt");

    assert_int_equal(http_url_parse("http://[::1]:8080/", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.port, "8080");

    static const char *const bad[] = {"https://h",     "h:80",         "http://",
                                      "http://h:",     "http://h:80x", "http://h:123456",
                                      "http://u%zz@h", "http://[::1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (http_url_parse(bad[i], &u, err, sizeof err) == 0)
            fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(http_url_parse("https://h", &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "must start with http://"));
}

static void test_request_text(void **state)
{
    (void)state;
    http_url_t u;
    char err[ERRBUF_SIZE], req[1024];
    assert_int_equal(http_url_parse("http://guest:guest@h:1/base", &u, err, sizeof err), 0);
    assert_int_equal(http_build_request(&u, "/api/queues/%2F/q", req, sizeof req), 0);
    assert_non_null(strstr(req, "GET /base/api/queues/%2F/q HTTP/1.0\r\n"));
    assert_non_null(strstr(req, "Host: h:1\r\n"));
    assert_non_null(strstr(req, "Authorization: Basic Z3Vlc3Q6Z3Vlc3Q=\r\n"));
    assert_int_equal(strcmp(req + strlen(req) - 4, "\r\n\r\n"), 0);

    /* Base64 padding for 1 and 2 trailing bytes. */
    strcpy(u.auth, "a");
    assert_int_equal(http_build_request(&u, "/", req, sizeof req), 0);
    assert_non_null(strstr(req, "Basic YQ==\r\n"));
    strcpy(u.auth, "ab");
    assert_int_equal(http_build_request(&u, "/", req, sizeof req), 0);
    assert_non_null(strstr(req, "Basic YWI=\r\n"));

    u.auth[0] = '\0';
    assert_int_equal(http_build_request(&u, "/", req, sizeof req), 0);
    assert_null(strstr(req, "Authorization"));
    assert_int_equal(http_build_request(&u, "/", req, 20), -1);
}

static void test_parse_response(void **state)
{
    (void)state;
    http_response_t r;
    char err[ERRBUF_SIZE];
    const char *ok = "HTTP/1.1 200 OK\r\ncontent-length: 7\r\nX: y\r\n\r\n{\"a\":1}";
    assert_int_equal(http_parse_response(ok, strlen(ok), &r, err, sizeof err), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"a\":1}");
    assert_int_equal(r.body_len, 7);
    http_response_free(&r);

    const char *nolen = "HTTP/1.0 404 Not Found\r\n\r\n";
    assert_int_equal(http_parse_response(nolen, strlen(nolen), &r, err, sizeof err), 0);
    assert_int_equal(r.status, 404);
    assert_int_equal(r.body_len, 0);
    http_response_free(&r);

    const char *cut = "HTTP/1.1 200 OK\r\nContent-Length: 70\r\n\r\n{\"a\":1}";
    assert_int_equal(http_parse_response(cut, strlen(cut), &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "content-length says 70"));
    const char *chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n";
    assert_int_equal(http_parse_response(chunked, strlen(chunked), &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "transfer-encoding chunked"));
    const char *junk = "SSH-2.0-OpenSSH\r\n\r\n";
    assert_int_equal(http_parse_response(junk, strlen(junk), &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "malformed HTTP response"));
    assert_null(r.body);
}

/*
 * Found by tests/fuzz/fuzz_mgmt.c: the response buffer is not NUL-terminated, and sscanf and
 * strtoull read the status and the content-length as C strings, past its end (sscanf took a
 * status from the bytes after the header block; glibc's first scans the whole "string" for its
 * NUL, which crashed the fuzzer). Each input here is followed in memory by bytes that would
 * change the answer if they were read.
 */
static void test_parse_stays_within_response(void **state)
{
    (void)state;
    http_response_t r;
    char err[ERRBUF_SIZE];
    static const char no_status[] = "HTTP/1.1\r\n\r\n"
                                    " 200 OK"; /* not part of the response */
    assert_int_equal(http_parse_response(no_status, 12, &r, err, sizeof err), -1);
    assert_string_equal(err, "malformed HTTP response (12 bytes)");
    assert_null(r.body);

    /* An empty content-length is no length: the body "1" (and what follows) is not one. */
    static const char empty_length[] = "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n1"
                                       "0";
    assert_int_equal(
        http_parse_response(empty_length, sizeof empty_length - 2, &r, err, sizeof err), -1);
    assert_string_equal(err, "HTTP response has an invalid content-length ''");

    static const char *const bad_lengths[] = {"+2", "2x", "0x2", "-2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_lengths / sizeof bad_lengths[0]; i++) {
        char raw[128];
        int n = snprintf(raw, sizeof raw, "HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\n[]",
                         bad_lengths[i]);
        if (http_parse_response(raw, (size_t)n, &r, err, sizeof err) == 0)
            fail_msg("content-length '%s' accepted", bad_lengths[i]);
        assert_non_null(strstr(err, "invalid content-length"));
    }

    static const char *const bad_status[] = {"HTTP/1.1 20 OK", "HTTP/1.1 +200 OK", "HTTP/1.1  200",
                                             "HTTP/1.1 2000",  "HTTP/1.1 600 X",   "HTTP/2 200 OK"};
    for (size_t i = 0; i < sizeof bad_status / sizeof bad_status[0]; i++) {
        char raw[128];
        int n = snprintf(raw, sizeof raw, "%s\r\n\r\n", bad_status[i]);
        if (http_parse_response(raw, (size_t)n, &r, err, sizeof err) == 0)
            fail_msg("status line '%s' accepted", bad_status[i]);
    }
    static const char bare[] = "HTTP/1.0 204\r\ncontent-length: 0 \r\n\r\n";
    assert_int_equal(http_parse_response(bare, sizeof bare - 1, &r, err, sizeof err), 0);
    assert_int_equal(r.status, 204);
    http_response_free(&r);
}

/* A one-shot local server: accepts one connection, records the request, answers `reply` and
 * closes. When reply is NULL it stays silent until the test writes to (or closes) release[1]. */
struct server {
    int lfd;
    int port;
    const char *reply;
    char request[2048];
    int release[2];
};

static void *serve_once(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->lfd, NULL, NULL);
    size_t n = 0;
    while (fd >= 0 && n < sizeof s->request - 1 && !strstr(s->request, "\r\n\r\n")) {
        ssize_t r = read(fd, s->request + n, sizeof s->request - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        s->request[n] = '\0';
    }
    if (s->reply)
        assert_true(write(fd, s->reply, strlen(s->reply)) == (ssize_t)strlen(s->reply));
    else
        assert_true(read(s->release[0], &(char){0}, 1) >= 0); /* 0: released */
    close(fd);
    return NULL;
}

static void listen_any(struct server *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 1), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
}

static void start_server(struct server *s, pthread_t *t)
{
    listen_any(s);
    assert_int_equal(pthread_create(t, NULL, serve_once, s), 0);
}

/* The URL of the local server, with optional credentials. */
static http_url_t local_url(const char *auth, int port)
{
    char url[128], err[ERRBUF_SIZE] = "";
    http_url_t u;
    snprintf(url, sizeof url, "http://%s127.0.0.1:%d", auth, port);
    assert_int_equal(http_url_parse(url, &u, err, sizeof err), 0);
    return u;
}

static void test_get_against_local_server(void **state)
{
    (void)state;
    struct server s = {.reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n[]"};
    pthread_t t;
    start_server(&s, &t);
    char err[ERRBUF_SIZE] = "";
    http_url_t u = local_url("u:p@", s.port);
    http_response_t r;
    assert_int_equal(http_get(&u, "/api/queues", 5000, &r, err, sizeof err), 0);
    pthread_join(t, NULL);
    close(s.lfd);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "[]");
    assert_non_null(strstr(s.request, "GET /api/queues HTTP/1.0\r\n"));
    assert_non_null(strstr(s.request, "Authorization: Basic dTpw\r\n"));
    http_response_free(&r);
}

/* The server never answers before http_get returns, so returning at all is the timeout; it
 * cannot come early either. */
static void test_get_times_out(void **state)
{
    (void)state;
    struct server s = {.reply = NULL};
    pthread_t t;
    assert_int_equal(pipe(s.release), 0);
    start_server(&s, &t);
    char err[ERRBUF_SIZE] = "";
    http_url_t u = local_url("", s.port);
    http_response_t r;
    int64_t t0 = now_mono_ms();
    assert_int_equal(http_get(&u, "/", 150, &r, err, sizeof err), -1);
    int64_t took = now_mono_ms() - t0;
    assert_true(took >= 140);
    assert_non_null(strstr(err, "timed out"));
    close(s.release[1]);
    pthread_join(t, NULL);
    close(s.release[0]);
    close(s.lfd);
}

static void test_get_connection_refused(void **state)
{
    (void)state;
    struct server s = {0};
    listen_any(&s); /* a port nobody listens on once closed */
    close(s.lfd);
    char err[ERRBUF_SIZE] = "";
    http_url_t u = local_url("", s.port);
    http_response_t r;
    assert_int_equal(http_get(&u, "/", 1000, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot connect to 127.0.0.1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_request_text),
        cmocka_unit_test(test_parse_response),
        cmocka_unit_test(test_parse_stays_within_response),
        cmocka_unit_test(test_get_against_local_server),
        cmocka_unit_test(test_get_times_out),
        cmocka_unit_test(test_get_connection_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
