/* Worker message payload fields: present, absent, wrong, and values jsonb would refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "executor/msgfields.h"

static void execution_ids(void **state)
{
    (void)state;
    char err[256];
    int64_t id = 0;
    json_object *o = json_tokener_parse("{\"execution_id\": 42}");
    assert_int_equal(mf_execution_id(o, &id, err, sizeof err), 1);
    assert_int_equal(id, 42);
    json_object_put(o);
    o = json_tokener_parse("{\"execution_id\": \"77\"}");
    assert_int_equal(mf_execution_id(o, &id, err, sizeof err), 1);
    assert_int_equal(id, 77);
    json_object_put(o);
    const char *bad[] = {"{\"execution_id\": \"077\"}", "{\"execution_id\": \"-1\"}",
                         "{\"execution_id\": 0}", "{\"execution_id\": 1.5}", "{\"execution_id\": \"\"}",
                         "{\"execution_id\": [1]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = json_tokener_parse(bad[i]);
        assert_int_equal(mf_execution_id(o, &id, err, sizeof err), -1);
        json_object_put(o);
    }
    o = json_tokener_parse("{\"execution_id\": null, \"other\": 1}");
    assert_int_equal(mf_execution_id(o, &id, err, sizeof err), 0);
    json_object_put(o);
}

static void strings_and_ints(void **state)
{
    (void)state;
    char err[256];
    const char *s = NULL;
    int64_t v = 0;
    json_object *o = json_tokener_parse(
        "{\"name\": \"w1\", \"ctl\": \"a\\u0007b\", \"n\": 5, \"big\": 99999999999, \"txt\": \"5\"}");
    assert_int_equal(mf_string(o, "name", 64, &s, err, sizeof err), 1);
    assert_string_equal(s, "w1");
    assert_int_equal(mf_string(o, "name", 1, &s, err, sizeof err), -1);
    assert_int_equal(mf_string(o, "ctl", 64, &s, err, sizeof err), -1);
    assert_string_equal(err, "field 'ctl' contains a control character");
    assert_int_equal(mf_string(o, "n", 64, &s, err, sizeof err), -1);
    assert_int_equal(mf_string(o, "missing", 64, &s, err, sizeof err), 0);
    assert_int_equal(mf_int(o, "n", 1, 10, &v, err, sizeof err), 1);
    assert_int_equal(v, 5);
    assert_int_equal(mf_int(o, "big", 1, INT32_MAX, &v, err, sizeof err), -1);
    assert_int_equal(mf_int(o, "txt", 1, 10, &v, err, sizeof err), -1);
    assert_int_equal(mf_int(o, "missing", 1, 10, &v, err, sizeof err), 0);
    json_object_put(o);
}

static void nul_anywhere_is_found(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse("{\"a\": [1, {\"b\": \"x\\u0000y\"}]}");
    assert_true(mf_has_nul(o));
    json_object_put(o);
    o = json_tokener_parse("{\"a\": [1, {\"b\": \"x\\\\u0000y\"}], \"c\": null}");
    assert_false(mf_has_nul(o));
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(execution_ids),
        cmocka_unit_test(strings_and_ints),
        cmocka_unit_test(nul_anywhere_is_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
