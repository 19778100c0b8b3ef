/* The identifier rules: worker ids, action refs, execution ids as text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "warren/ids.h"

static void test_worker_ids(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "w",        "7",
        "worker-1", "node_1.eu-west",
        "A.b.C",    "a-",
        "a_",       "0123456789012345678901234567890123456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!ids_worker_valid(ok[i]))
            fail_msg("'%s' refused", ok[i]);
    static const char *const bad[] = {
        "",     "-w",
        "_w",   ".w",
        "w.",   "a..b",
        "w*",   "w#",
        "*",    "#",
        "w/x",  "w x",
        "w\tx", "w:1",
        "w%2F", "caf\xc3\xa9",
        "w\n",  "01234567890123456789012345678901234567890123456789012345678901234", /* 65 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ids_worker_valid(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
    assert_false(ids_worker_valid(NULL));
}

/* valid accepts each of ok[0..nok) and refuses each of bad[0..nbad), and NULL. */
static void check_rule(bool (*valid)(const char *), const char *const *ok, size_t nok,
                       const char *const *bad, size_t nbad)
{
    for (size_t i = 0; i < nok; i++)
        if (!valid(ok[i]))
            fail_msg("'%s' refused", ok[i]);
    for (size_t i = 0; i < nbad; i++)
        if (valid(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
    assert_false(valid(NULL));
}

static void test_action_refs(void **state)
{
    (void)state;
    static const char *const ok[] = {"core.echo", "my-pack.do_it.v2", "a", "_x", "-x", "a..b"};
    static const char *const bad[] = {"",        ".hidden", "..",    "../bin/sh",   "a/b",
                                      "echo;rm", "echo x",  "$(id)", "caf\xC3\xA9", "a\n"};
    check_rule(ids_action_ref_valid, ok, sizeof ok / sizeof ok[0], bad, sizeof bad / sizeof bad[0]);
    char longref[ACTION_REF_MAX + 2];
    memset(longref, 'a', sizeof longref - 1);
    longref[sizeof longref - 1] = '\0';
    assert_false(ids_action_ref_valid(longref)); /* 256 */
    longref[ACTION_REF_MAX] = '\0';
    assert_true(ids_action_ref_valid(longref)); /* 255 */
}

static void test_idempotency_keys(void **state)
{
    (void)state;
    static const char *const ok[] = {"k", "0f8e2c1a-5b7d-4e21-9a3c-2d6f8b1e4a70", "order-42:charge",
                                     "a/b+c=", "!~"};
    static const char *const bad[] = {"", "a b", "tab\there", "a\n", "caf\xC3\xA9", "\x7f"};
    check_rule(ids_idempotency_key_valid, ok, sizeof ok / sizeof ok[0], bad,
               sizeof bad / sizeof bad[0]);
    char key[IDEMPOTENCY_KEY_MAX + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    assert_false(ids_idempotency_key_valid(key)); /* 256 */
    key[IDEMPOTENCY_KEY_MAX] = '\0';
    assert_true(ids_idempotency_key_valid(key)); /* 255 */
}

static void test_execution_id_text(void **state)
{
    (void)state;
    int64_t id = 0;
    assert_int_equal(ids_execution_id_parse("42", 2, &id), 0);
    assert_int_equal(id, 42);
    assert_int_equal(ids_execution_id_parse("999999999999999999", 18, &id), 0);
    assert_int_equal(id, INT64_C(999999999999999999));
    static const char *const bad[] = {
        "", "0", "042", "-1", "+1", " 1", "1 ", "1a", "4.5", "1e3", "9999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        id = 7;
        if (ids_execution_id_parse(bad[i], strlen(bad[i]), &id) == 0)
            fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(id, 7);
    }
    const char nul_inside[] = {'1', '2', '\0', '3'};
    assert_int_equal(ids_execution_id_parse(nul_inside, sizeof nul_inside, &id),
                     -1); /* a NUL inside */

    /* Written as read back. */
    char text[IDS_EXECUTION_ID_TEXT];
    ids_execution_id_text(INT64_C(999999999999999999), text, sizeof text);
    assert_string_equal(text, "999999999999999999");
    assert_int_equal(ids_execution_id_parse(text, strlen(text), &id), 0);
    assert_int_equal(id, INT64_C(999999999999999999));
    ids_execution_id_text(INT64_MIN, text, sizeof text); /* the widest: it fits */
    assert_string_equal(text, "-9223372036854775808");
}

static void test_incarnations(void **state)
{
    (void)state;
    assert_true(ids_incarnation_valid("0123456789abcdef0123456789abcdef"));
    assert_false(ids_incarnation_valid("0123456789ABCDEF0123456789abcdef"));  /* lowercase only */
    assert_false(ids_incarnation_valid("0123456789abcdef0123456789abcde"));   /* 31 */
    assert_false(ids_incarnation_valid("0123456789abcdef0123456789abcdef0")); /* 33 */
    assert_false(ids_incarnation_valid("0123456789abcdef0123456789abcdeg"));
    assert_false(ids_incarnation_valid(""));
    assert_false(ids_incarnation_valid(NULL));
}

static void test_traceparents(void **state)
{
    (void)state;
    assert_true(ids_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    assert_true(ids_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
    assert_false(ids_traceparent_valid("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
    assert_false(ids_traceparent_valid("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
    assert_false(ids_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
    assert_false(ids_traceparent_valid("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    assert_false(ids_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"));
    assert_false(ids_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01"));
    assert_false(ids_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g"));
    assert_false(ids_traceparent_valid(""));
    assert_false(ids_traceparent_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_ids),       cmocka_unit_test(test_action_refs),
        cmocka_unit_test(test_idempotency_keys), cmocka_unit_test(test_execution_id_text),
        cmocka_unit_test(test_incarnations),     cmocka_unit_test(test_traceparents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
