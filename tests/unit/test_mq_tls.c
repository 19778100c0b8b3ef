/* The MessageClient's TLS settings: what is refused before any I/O, and the error texts of the
 * failures only a broker can cause. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <amqp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mq/mq_internal.h"
#include "warren/mq.h"

typedef struct {
    char dir[64];
    char ca[128], cert[128], key[128], encrypted[128], old_encrypted[128];
} files_t;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Only the shape matters before OpenSSL reads them: the checks never parse a certificate. */
static int setup(void **state)
{
    files_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/warren-unit-tls.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->ca, sizeof f->ca, "%s/ca.pem", f->dir);
    snprintf(f->cert, sizeof f->cert, "%s/client.pem", f->dir);
    snprintf(f->key, sizeof f->key, "%s/client.key", f->dir);
    snprintf(f->encrypted, sizeof f->encrypted, "%s/pkcs8.key", f->dir);
    snprintf(f->old_encrypted, sizeof f->old_encrypted, "%s/legacy.key", f->dir);
    write_file(f->ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    write_file(f->cert, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    write_file(f->key, "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
    write_file(
        f->encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n");
    write_file(f->old_encrypted,
               "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
               "DEK-Info: AES-128-CBC,00\n\nMIIE\n-----END RSA PRIVATE KEY-----\n");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    files_t *f = *state;
    const char *paths[] = {f->ca, f->cert, f->key, f->encrypted, f->old_encrypted};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        unlink(paths[i]);
    rmdir(f->dir);
    free(f);
    return 0;
}

static mq_options_t amqps(const files_t *f)
{
    return (mq_options_t){.url = "amqps://u:secret@broker.example:5671/%2f",
                          .tls = {.ca_file = f->ca, .verify_peer = true, .verify_hostname = true}};
}

/* check OPTIONS EXPECTED: NULL expects success, else a fragment of the error. */
static void check(const mq_options_t *o, const char *expected)
{
    char err[ERRBUF_SIZE] = "";
    int rc = mq_check_options(o, err, sizeof err);
    if (!expected) {
        assert_int_equal(rc, 0);
        return;
    }
    assert_int_equal(rc, -1);
    if (!strstr(err, expected))
        fail_msg("error '%s' lacks '%s'", err, expected);
    assert_null(strstr(err, "secret")); /* never the URL's password */
}

static void test_options_from_config(void **state)
{
    (void)state;
    warren_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rabbitmq.url = "amqps://u:p@h/v";
    cfg.rabbitmq.tls.ca_file = "/ca.pem";
    cfg.rabbitmq.tls.cert_file = "/c.pem";
    cfg.rabbitmq.tls.key_file = "/c.key";
    cfg.rabbitmq.tls.verify_peer = true;
    cfg.rabbitmq.tls.verify_hostname = false;
    mq_options_t o;
    mq_options_from_config(&o, &cfg, "warren-executor");
    assert_string_equal(o.tls.ca_file, "/ca.pem");
    assert_string_equal(o.tls.cert_file, "/c.pem");
    assert_string_equal(o.tls.key_file, "/c.key");
    assert_true(o.tls.verify_peer);
    assert_false(o.tls.verify_hostname);
}

static void test_good_settings(void **state)
{
    files_t *f = *state;
    mq_options_t o = amqps(f);
    check(&o, NULL);
    o.tls.cert_file = f->cert;
    o.tls.key_file = f->key;
    check(&o, NULL);
    /* Without peer verification no CA file is needed (or read). */
    o.tls.verify_peer = false;
    o.tls.ca_file = "/nonexistent/ca.pem";
    check(&o, NULL);
    o.tls.ca_file = NULL;
    check(&o, NULL);
}

static void test_plain_url_ignores_tls(void **state)
{
    (void)state;
    mq_options_t o = {.url = "amqp://u:secret@127.0.0.1:5672/%2f",
                      .tls = {.ca_file = "/nonexistent/ca.pem",
                              .cert_file = "/nonexistent/c.pem",
                              .verify_peer = true}};
    check(&o, NULL);
    o.url = "http://u:secret@h/";
    check(&o, "cannot parse the RabbitMQ URL");
}

static void test_bad_files(void **state)
{
    files_t *f = *state;
    mq_options_t o = amqps(f);
    o.tls.ca_file = "/nonexistent/ca.pem";
    check(&o,
          "message_queue.rabbitmq.tls.ca_file '/nonexistent/ca.pem': No such file or directory");
    o.tls.ca_file = "";
    check(&o, "message_queue.rabbitmq.tls.ca_file is empty");
    o.tls.ca_file = f->dir;
    check(&o, "not a regular file");

    o = amqps(f);
    o.tls.cert_file = f->cert;
    check(&o, "tls.cert_file is set but message_queue.rabbitmq.tls.key_file is empty");
    o.tls.cert_file = "";
    o.tls.key_file = f->key;
    check(&o, "tls.key_file is set but message_queue.rabbitmq.tls.cert_file is empty");
    o.tls.cert_file = "/nonexistent/c.pem";
    check(&o, "tls.cert_file '/nonexistent/c.pem': No such file");
    o.tls.cert_file = f->cert;
    o.tls.key_file = f->encrypted;
    check(&o, "is encrypted: rabbitmq-c cannot ask for its passphrase");
    o.tls.key_file = f->old_encrypted;
    check(&o, "is encrypted");
}

/* A connect with settings that cannot work fails before any socket is opened. */
static void test_connect_refuses_before_io(void **state)
{
    files_t *f = *state;
    mq_options_t o = amqps(f);
    o.tls.cert_file = f->cert;
    mq_client_t *c = mq_new(&o);
    assert_non_null(c);
    char err[ERRBUF_SIZE];
    assert_int_equal(mq_connect(c, err, sizeof err), -1);
    assert_non_null(strstr(err, "key_file is empty"));
    assert_false(mq_connected(c));
    mq_destroy(c);
}

/* A real handshake with a broken CA file: OpenSSL refuses it, and the error names the file. */
static void test_ca_file_without_certificate(void **state)
{
    files_t *f = *state;
    mq_options_t o = amqps(f);
    o.tls.ca_file = f->key; /* readable, but no certificate in it */
    mq_client_t *c = mq_new(&o);
    char err[ERRBUF_SIZE];
    assert_int_equal(mq_connect(c, err, sizeof err), -1);
    assert_non_null(strstr(err, "holds no PEM certificate"));
    mq_destroy(c);
}

static void test_describe(void **state)
{
    files_t *f = *state;
    mq_tls_t t = {.ca_file = f->ca, .cert_file = f->cert};
    char buf[ERRBUF_SIZE];
    mq_tls_describe(AMQP_STATUS_SSL_PEER_VERIFY_FAILED, "h", 5671, &t, buf, sizeof buf);
    assert_non_null(strstr(buf, "certificate of h:5671 is not trusted"));
    assert_non_null(strstr(buf, f->ca));
    mq_tls_describe(AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED, "10.0.0.1", 5671, &t, buf, sizeof buf);
    assert_non_null(strstr(buf, "does not name the host '10.0.0.1'"));
    mq_tls_describe(AMQP_STATUS_SSL_CONNECTION_FAILED, "h", 5672, &t, buf, sizeof buf);
    assert_non_null(strstr(buf, "TLS handshake with h:5672 failed: not a TLS port"));
    mq_tls_describe(AMQP_STATUS_TIMEOUT, "h", 5671, &t, buf, sizeof buf);
    assert_non_null(strstr(buf, "no TLS session within message_queue.rabbitmq.connect_timeout_ms"));
    mq_tls_describe(AMQP_STATUS_SSL_ERROR, "h", 5671, &t, buf, sizeof buf);
    assert_non_null(strstr(buf, "refuse the client certificate"));
    mq_tls_describe(AMQP_STATUS_SOCKET_ERROR, "h", 5671, &t, buf, sizeof buf);
    assert_non_null(strstr(buf, "connect h:5671 (TLS): "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_from_config),
        cmocka_unit_test_setup_teardown(test_good_settings, setup, teardown),
        cmocka_unit_test(test_plain_url_ignores_tls),
        cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refuses_before_io, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ca_file_without_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
