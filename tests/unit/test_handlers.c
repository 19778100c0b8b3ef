/* Unit tests for the handler registry: ABI checks (versions 1 and 2), lookups and the listing
 * (action_ref rules: test_ids). */
#include <setjmp.h>
#include <libgen.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "warren/log.h"
#include "worker/handlers.h"

static int dummy_run(const char *params, size_t len, warren_handler_output_t *out)
{
    return 0;
}

static int dummy_run_v2(const warren_handler_call_t *call, warren_handler_output_t *out)
{
    return 0;
}

static void test_builtin_noop(void **state)
{
    handlers_t *r = handlers_new();
    const handler_entry_t *h = handlers_find(r, "core.noop");
    assert_non_null(h);
    assert_null(h->v2); /* inline: the cheapest handler there is */
    assert_string_equal(h->action_ref, "core.noop");
    warren_handler_output_t out = {0};
    assert_int_equal(h->v1->run("{}", 2, &out), 0);
    assert_null(out.result_json);
    assert_null(handlers_find(r, "core.echo"));
    handlers_free(r);
}

static void test_add_rejects(void **state)
{
    handlers_t *r = handlers_new();
    char err[ERRBUF_SIZE];
    warren_handler_t future = {.abi_version = 99, .action_ref = "x.future", .run = dummy_run};
    assert_int_equal(handlers_add(r, &future, "future.so", err, sizeof err), -1);
    assert_string_equal(err,
                        "future.so: handler ABI 99 in warren_handler_v1, this worker speaks ABI 1 "
                        "there");
    assert_null(handlers_find(r, "x.future"));

    warren_handler_t bad_ref = {
        .abi_version = WARREN_HANDLER_ABI, .action_ref = "../x", .run = dummy_run};
    assert_int_equal(handlers_add(r, &bad_ref, "bad.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "invalid action_ref"));

    warren_handler_t no_run = {.abi_version = WARREN_HANDLER_ABI, .action_ref = "x.norun"};
    assert_int_equal(handlers_add(r, &no_run, "norun.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "no run function"));

    warren_handler_t dup = {
        .abi_version = WARREN_HANDLER_ABI, .action_ref = "core.noop", .run = dummy_run};
    assert_int_equal(handlers_add(r, &dup, "dup.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "already registered"));

    warren_handler_t ok = {
        .abi_version = WARREN_HANDLER_ABI, .action_ref = "x.ok", .run = dummy_run};
    assert_int_equal(handlers_add(r, &ok, "ok.so", err, sizeof err), 0);
    assert_ptr_equal(handlers_find(r, "x.ok")->v1, &ok);
    handlers_free(r);
}

static void test_add_v2(void **state)
{
    handlers_t *r = handlers_new();
    char err[ERRBUF_SIZE];
    /* A version 1 number under the version 2 symbol is a module built wrong: refused. */
    warren_handler_v2_t wrong = {
        .abi_version = WARREN_HANDLER_ABI, .action_ref = "x.wrong", .run = dummy_run_v2};
    assert_int_equal(handlers_add_v2(r, &wrong, "wrong.so", err, sizeof err), -1);
    assert_string_equal(err,
                        "wrong.so: handler ABI 1 in warren_handler_v2, this worker speaks ABI 2 "
                        "there");
    warren_handler_v2_t no_run = {.abi_version = WARREN_HANDLER_ABI_V2, .action_ref = "x.norun"};
    assert_int_equal(handlers_add_v2(r, &no_run, "norun.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "no run function"));
    warren_handler_v2_t dup = {
        .abi_version = WARREN_HANDLER_ABI_V2, .action_ref = "core.noop", .run = dummy_run_v2};
    assert_int_equal(handlers_add_v2(r, &dup, "dup.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "already registered"));

    warren_handler_v2_t ok = {
        .abi_version = WARREN_HANDLER_ABI_V2, .action_ref = "x.threaded", .run = dummy_run_v2};
    assert_int_equal(handlers_add_v2(r, &ok, "ok.so", err, sizeof err), 0);
    const handler_entry_t *h = handlers_find(r, "x.threaded");
    assert_ptr_equal(h->v2, &ok);
    assert_null(h->v1);
    json_object *list = handlers_list(r, "/nonexistent");
    assert_string_equal(json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN),
                        "[\"core.noop\",\"x.threaded\"]");
    json_object_put(list);
    handlers_free(r);
}

static void put_file(const char *dir, const char *name, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_exec_path_and_list(void **state)
{
    char dir[] = "/tmp/warren-registry-XXXXXX";
    assert_non_null(mkdtemp(dir));
    put_file(dir, "t.run", 0755);
    put_file(dir, "t.plain", 0644);   /* not executable */
    put_file(dir, "broken.so", 0755); /* modules are never executed */
    put_file(dir, ".t.hidden", 0755);
    put_file(dir, "README.md", 0644);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/t.dir", dir);
    assert_int_equal(mkdir(sub, 0755), 0); /* a directory is not a handler */

    char path[4096], err[ERRBUF_SIZE];
    assert_int_equal(handlers_exec_path(dir, "t.run", path, sizeof path, err, sizeof err), 0);
    assert_non_null(strstr(path, "/t.run"));
    const char *missing[] = {"t.plain", "broken.so", "t.dir", "t.none"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(handlers_exec_path(dir, missing[i], path, sizeof path, err, sizeof err),
                         -1);
        assert_non_null(strstr(err, "no handler for action"));
    }
    assert_int_equal(handlers_exec_path(dir, ".t.hidden", path, sizeof path, err, sizeof err), -1);
    assert_non_null(strstr(err, "invalid action_ref"));

    handlers_t *r = handlers_new();
    assert_int_equal(handlers_load_dir(r, dir), 0); /* broken.so is logged and skipped */
    json_object *list = handlers_list(r, dir);
    assert_string_equal(json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN),
                        "[\"core.noop\",\"t.run\"]");
    json_object_put(list);
    handlers_free(r);

    const char *names[] = {"t.run", "t.plain", "broken.so", ".t.hidden", "README.md"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(sub);
    rmdir(dir);
}

/* An executable its group or others can write is refused, with a reason, and not announced. */
static void test_writable_handler_refused(void **state)
{
    char dir[] = "/tmp/warren-registry-XXXXXX";
    assert_non_null(mkdtemp(dir));
    put_file(dir, "t.ok", 0755);
    put_file(dir, "t.group", 0775);
    put_file(dir, "t.world", 0757);
    char path[4096], err[ERRBUF_SIZE];
    assert_int_equal(handlers_exec_path(dir, "t.ok", path, sizeof path, err, sizeof err), 0);
    assert_int_equal(handlers_exec_path(dir, "t.group", path, sizeof path, err, sizeof err), -1);
    assert_non_null(strstr(err, "/t.group is writable by its group or others (mode 775): refused"));
    assert_int_equal(handlers_exec_path(dir, "t.world", path, sizeof path, err, sizeof err), -1);
    assert_non_null(strstr(err, "(mode 757)"));
    handlers_t *r = handlers_new();
    json_object *list = handlers_list(r, dir);
    assert_string_equal(json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN),
                        "[\"core.noop\",\"t.ok\"]");
    json_object_put(list);
    handlers_free(r);
    const char *names[] = {"t.ok", "t.group", "t.world"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* The example module (a real one) loads from a directory of ours, and does not when it is
 * writable by others or, when the test can arrange it (as root), owned by another user. */
static void test_untrusted_module_refused(void **state)
{
    char dir[] = "/tmp/warren-registry-XXXXXX", so[4096], copy[4200];
    assert_non_null(mkdtemp(dir));
    char exe[4096] = "";
    assert_true(readlink("/proc/self/exe", exe, sizeof exe - 1) > 0); /* in the build dir */
    snprintf(so, sizeof so, "%s/handlers/example_upper.so", dirname(exe));
    snprintf(copy, sizeof copy, "%s/example_upper.so", dir);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", so, copy);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(copy, 0755), 0);
    handlers_t *r = handlers_new();
    assert_int_equal(handlers_load_dir(r, dir), 1);
    handlers_free(r);
    assert_int_equal(chmod(copy, 0775), 0);
    r = handlers_new();
    assert_int_equal(handlers_load_dir(r, dir), 0);
    assert_null(handlers_find(r, "example.upper"));
    handlers_free(r);
    assert_int_equal(chmod(copy, 0755), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(copy, 65534, 65534), 0);
        r = handlers_new();
        assert_int_equal(handlers_load_dir(r, dir), 0);
        handlers_free(r);
    }
    unlink(copy);
    rmdir(dir);
}

int main(void)
{
    log_setup(LOG_ERROR, LOG_FORMAT_TEXT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_noop),
        cmocka_unit_test(test_add_rejects),
        cmocka_unit_test(test_add_v2),
        cmocka_unit_test(test_exec_path_and_list),
        cmocka_unit_test(test_writable_handler_refused),
        cmocka_unit_test(test_untrusted_module_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
