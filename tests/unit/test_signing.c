/* Message signing: key files, signatures that verify, and every way one does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "warren/signing.h"

#define SECRET_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SECRET_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define BODY "{\"payload\":{\"execution_id\":7}}"

/* A key file with `text` and `mode`; its path into path. */
static void key_file(char *path, size_t len, const char *text, mode_t mode)
{
    snprintf(path, len, "/tmp/warren-test-signing.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

static sign_keys_t *load(const char *text, mode_t mode, char *err, size_t errlen)
{
    char path[64];
    key_file(path, sizeof path, text, mode);
    sign_keys_t *k = sign_load(path, err, errlen);
    unlink(path);
    return k;
}

static void test_sign_and_verify(void **state)
{
    (void)state;
    char err[256], id[SIGN_KEY_ID_MAX + 1], sig[SIGN_HEX_LEN + 1];
    sign_keys_t *k = load("# keys\n\nk1 " SECRET_A "\n", 0600, err, sizeof err);
    assert_non_null(k);
    assert_int_equal(sign_key_count(k), 1);
    assert_int_equal(sign_compute(k, "ExecutionRequested", "m-1", BODY, strlen(BODY), id, sig), 0);
    assert_string_equal(id, "k1");
    assert_int_equal(strlen(sig), SIGN_HEX_LEN);
    assert_int_equal(
        sign_verify(k, "ExecutionRequested", "m-1", BODY, strlen(BODY), id, sig, err, sizeof err),
        0);
    sign_free(k);
}

/* The body, the type and the message id are covered; a signature without its headers or with
 * another key's id does not verify. */
static void test_tampering_refused(void **state)
{
    (void)state;
    char err[256], id[SIGN_KEY_ID_MAX + 1], sig[SIGN_HEX_LEN + 1];
    sign_keys_t *k = load("k1 " SECRET_A "\n", 0600, err, sizeof err);
    assert_non_null(k);
    assert_int_equal(sign_compute(k, "ExecutionCompleted", "m-1", BODY, strlen(BODY), id, sig), 0);
    const char *other = "{\"payload\":{\"execution_id\":8}}";
    assert_int_equal(
        sign_verify(k, "ExecutionCompleted", "m-1", other, strlen(other), id, sig, err, sizeof err),
        -1);
    assert_non_null(strstr(err, "does not match"));
    assert_int_equal(sign_verify(k, "ExecutionStatusChanged", "m-1", BODY, strlen(BODY), id, sig,
                                 err, sizeof err),
                     -1);
    assert_int_equal(
        sign_verify(k, "ExecutionCompleted", "m-2", BODY, strlen(BODY), id, sig, err, sizeof err),
        -1);
    assert_int_equal(sign_verify(k, "ExecutionCompleted", "m-1", BODY, strlen(BODY), NULL, NULL,
                                 err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "unsigned"));
    assert_int_equal(
        sign_verify(k, "ExecutionCompleted", "m-1", BODY, strlen(BODY), "k9", sig, err, sizeof err),
        -1);
    assert_non_null(strstr(err, "does not hold"));
    sig[0] = sig[0] == '0' ? '1' : '0';
    assert_int_equal(
        sign_verify(k, "ExecutionCompleted", "m-1", BODY, strlen(BODY), id, sig, err, sizeof err),
        -1);
    sign_free(k);
}

/* Rotation: a process holding the old and the new key verifies both; the first line signs. */
static void test_rotation(void **state)
{
    (void)state;
    char err[256], id[SIGN_KEY_ID_MAX + 1], sig[SIGN_HEX_LEN + 1];
    sign_keys_t *old = load("old " SECRET_A "\n", 0600, err, sizeof err);
    sign_keys_t *both = load("new " SECRET_B "\nold " SECRET_A "\n", 0400, err, sizeof err);
    assert_non_null(old);
    assert_non_null(both);
    assert_string_equal(sign_key_id(both), "new");
    assert_int_equal(sign_compute(old, "T", "m", BODY, strlen(BODY), id, sig), 0);
    assert_int_equal(sign_verify(both, "T", "m", BODY, strlen(BODY), id, sig, err, sizeof err), 0);
    assert_int_equal(sign_compute(both, "T", "m", BODY, strlen(BODY), id, sig), 0);
    assert_string_equal(id, "new");
    assert_int_equal(sign_verify(old, "T", "m", BODY, strlen(BODY), id, sig, err, sizeof err), -1);
    sign_free(old);
    sign_free(both);
}

static void test_bad_files(void **state)
{
    (void)state;
    char err[256];
    assert_null(load("k1 " SECRET_A "\n", 0644, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    assert_null(load("k1 short\n", 0600, err, sizeof err));
    assert_non_null(strstr(err, "line 1 has a secret shorter than 32 bytes"));
    assert_null(load("# nothing\n", 0600, err, sizeof err));
    assert_non_null(strstr(err, "no key"));
    assert_null(load("k1 " SECRET_A "\nk1 " SECRET_B "\n", 0600, err, sizeof err));
    assert_non_null(strstr(err, "line 2 repeats a key id"));
    assert_null(load("k/1 " SECRET_A "\n", 0600, err, sizeof err));
    assert_null(load("k1 " SECRET_A " extra\n", 0600, err, sizeof err));
    assert_null(sign_load("/nonexistent/warren.keys", err, sizeof err));
    assert_non_null(strstr(err, "cannot read"));
}

/* Off (no keys set), every check passes and nothing is signed. */
static void test_off(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(sign_setup("", err, sizeof err), 0);
    assert_null(sign_active());
    mq_delivery_t d = {0};
    assert_int_equal(sign_check(&d, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sign_and_verify),
        cmocka_unit_test(test_tampering_refused),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
