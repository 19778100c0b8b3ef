/* The API's keys: api.keys text, keys files and their permissions, lookup by secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "executor/api_keys.h"

#define S1 "s3cr3t-0123456789"
#define S2 "another-secret-abcdef"

static void test_list(void **state)
{
    (void)state;
    api_keys_t k = {0};
    char err[512];
    assert_int_equal(
        api_keys_add_list(&k, "ops:write:" S1 ",ci:read:" S2, "api.keys", err, sizeof err), 0);
    assert_int_equal(k.n, 2);
    const api_key_t *ops = api_keys_find(&k, S1);
    assert_non_null(ops);
    assert_string_equal(ops->name, "ops");
    assert_int_equal(ops->scope, API_SCOPE_OPERATE); /* "write": the deprecated name of operate */
    assert_true(ops->named_write);
    assert_int_equal(api_keys_find(&k, S2)->scope, API_SCOPE_READ);
    assert_null(api_keys_find(&k, "s3cr3t-012345678"));
    assert_null(api_keys_find(&k, ""));
    api_keys_free(&k);
}

static void test_scopes(void **state)
{
    (void)state;
    const char *names[] = {"read", "submit", "operate", "admin"};
    bool deprecated;
    for (int s = API_SCOPE_READ; s <= API_SCOPE_ADMIN; s++) {
        const char *n = names[s - API_SCOPE_READ];
        assert_int_equal(api_scope_parse(n, strlen(n), &deprecated), s);
        assert_false(deprecated);
        assert_string_equal(api_scope_name((api_scope_t)s), n);
    }
    assert_int_equal(api_scope_parse("write", 5, &deprecated), API_SCOPE_OPERATE);
    assert_true(deprecated);
    assert_int_equal(api_scope_parse("adminx", 5, &deprecated), API_SCOPE_ADMIN); /* by length */
    assert_int_equal(api_scope_parse("adminx", 6, &deprecated), 0);
    assert_int_equal(api_scope_parse("", 0, &deprecated), 0);
    /* Each scope includes the ones before it: the checks compare them in this order. */
    assert_true(API_SCOPE_READ < API_SCOPE_SUBMIT && API_SCOPE_SUBMIT < API_SCOPE_OPERATE &&
                API_SCOPE_OPERATE < API_SCOPE_ADMIN);
}

static void test_list_errors_never_show_the_secret(void **state)
{
    (void)state;
    const char *bad[] = {"ops:write",
                         "ops:root:" S1,
                         "ops:Admin:" S1,
                         "o p:read:" S1,
                         "ops:read:short",
                         "ops:read:" S1 ",ops:write:" S2,
                         "a:read:" S1 ",b:read:" S1,
                         "ops:read:" S1 " x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        api_keys_t k = {0};
        char err[512] = "";
        assert_int_equal(api_keys_add_list(&k, bad[i], "api.keys", err, sizeof err), -1);
        assert_null(strstr(err, S1));
        assert_null(strstr(err, S2));
        assert_non_null(strstr(err, "api.keys"));
        api_keys_free(&k);
    }
}

static void test_file_text(void **state)
{
    (void)state;
    api_keys_t k = {0};
    char err[512];
    assert_int_equal(api_keys_add_file_text(
                         &k, "# keys\n\nops write " S1 "\n  ci\tread " S2 "  # trailing comment\n",
                         "keys", err, sizeof err),
                     0);
    assert_int_equal(k.n, 2);
    assert_string_equal(api_keys_find(&k, S2)->name, "ci");
    assert_int_equal(api_keys_add_file_text(&k, "x read\n", "keys", err, sizeof err), -1);
    assert_non_null(strstr(err, "keys:1"));
    api_keys_free(&k);
}

static void test_file_permissions(void **state)
{
    (void)state;
    char path[] = "/tmp/warren-keys-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "ops write " S1 "\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    api_keys_t k = {0};
    char err[512];
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(api_keys_add_file(&k, path, err, sizeof err), 0);
    assert_int_equal(k.n, 1);
    api_keys_free(&k);
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(api_keys_add_file(&k, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "group or others"));
    assert_int_equal(chmod(path, 0604), 0);
    assert_int_equal(api_keys_add_file(&k, path, err, sizeof err), -1);
    unlink(path);
    assert_int_equal(api_keys_add_file(&k, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read"));
    api_keys_free(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_list_errors_never_show_the_secret),
        cmocka_unit_test(test_file_text),
        cmocka_unit_test(test_file_permissions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
