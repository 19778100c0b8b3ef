/* JSON message fields: present, absent, wrong, every error naming the field by its path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "warren/jsonfield.h"

static const char sample[] =
    "{\"name\": \"w1\", \"ctl\": \"a\\u0007b\", \"nul\": \"a\\u0000b\", \"empty\": \"\","
    " \"n\": 5, \"big\": 99999999999, \"huge\": 99999999999999999999, \"txt\": \"5\","
    " \"frac\": 1.5, \"obj\": {}, \"arr\": [\"a\", 7, null, \"\"], \"nothing\": null,"
    " \"msg\": \"line 1\\nline 2\"}";

enum kind { STR, STR_REQ, INT, INT_REQ, OBJ, ARR, AT, TEXT };

/* {what, key, expected rc, error (exact) when rc is -1} */
static const struct {
    enum kind kind;
    const char *key;
    int rc;
    const char *err;
} cases[] = {
    {STR, "name", 1, NULL},
    {STR, "missing", 0, NULL},
    {STR, "nothing", 0, NULL},
    {STR_REQ, "missing", -1, "field 'payload.missing' is missing"},
    {STR_REQ, "nothing", -1, "field 'payload.nothing' is missing"},
    {STR, "empty", 1, NULL},
    {STR_REQ, "empty", -1, "field 'payload.empty' is empty"},
    {STR, "ctl", -1, "field 'payload.ctl' contains a control character"},
    {STR, "nul", -1, "field 'payload.nul' contains a NUL character"},
    {STR, "n", -1, "field 'payload.n': expected a string, got an integer"},
    {STR, "obj", -1, "field 'payload.obj': expected a string, got an object"},
    {STR, "msg", -1, "field 'payload.msg' contains a control character"},
    {INT, "n", 1, NULL},
    {INT, "missing", 0, NULL},
    {INT_REQ, "missing", -1, "field 'payload.missing' is missing"},
    {INT, "big", -1, "field 'payload.big' is 99999999999, expected 1..10"},
    {INT, "huge", -1, "field 'payload.huge' is 9223372036854775807, expected 1..10"},
    {INT, "txt", -1, "field 'payload.txt': expected an integer, got a string"},
    {INT, "frac", -1, "field 'payload.frac': expected an integer, got a fractional number"},
    {INT, "nothing", 0, NULL},
    {OBJ, "obj", 1, NULL},
    {OBJ, "arr", -1, "field 'payload.arr': expected an object, got an array"},
    {ARR, "arr", 1, NULL},
    {ARR, "name", -1, "field 'payload.name': expected an array, got a string"},
    {AT, "arr", -1, "field 'payload.arr[1]': expected a string, got an integer"},
    {TEXT, "msg", 1, NULL},
    {TEXT, "nul", 1, NULL},
    {TEXT, "n", -1, "field 'payload.n': expected a string, got an integer"},
};

static int read_case(const jf_t *r, size_t i)
{
    const char *s;
    int64_t v;
    json_object *o;
    size_t len;
    switch (cases[i].kind) {
    case STR: return jf_string(r, cases[i].key, false, 64, &s);
    case STR_REQ: return jf_string(r, cases[i].key, true, 64, &s);
    case INT: return jf_int(r, cases[i].key, false, 1, 10, &v);
    case INT_REQ: return jf_int(r, cases[i].key, true, 1, 10, &v);
    case OBJ: return jf_object(r, cases[i].key, false, &o);
    case ARR: return jf_array(r, cases[i].key, false, 10, &o);
    case AT: return jf_string_at(r, cases[i].key, 1, 64, &s);
    case TEXT: return jf_text(r, cases[i].key, false, &s, &len);
    }
    return 99;
}

static void test_each_case(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse(sample);
    assert_non_null(o);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        jf_t r = {o, "payload", err, sizeof err};
        int rc = read_case(&r, i);
        if (rc != cases[i].rc || (cases[i].err && strcmp(err, cases[i].err) != 0))
            fail_msg("case %zu (%s): rc %d \"%s\", want %d \"%s\"", i, cases[i].key, rc, err,
                     cases[i].rc, cases[i].err ? cases[i].err : "");
    }
    json_object_put(o);
}

static void test_values_and_names(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse(sample);
    char err[256] = "";
    jf_t top = {o, NULL, err, sizeof err};
    const char *s = NULL;
    int64_t v = 0;
    assert_int_equal(jf_string(&top, "name", true, 64, &s), 1);
    assert_string_equal(s, "w1");
    assert_int_equal(jf_string(&top, "name", true, 1, &s), -1);
    assert_string_equal(err, "field 'name' is 2 bytes long, the limit is 1"); /* no path */
    assert_int_equal(jf_int(&top, "n", true, 1, 10, &v), 1);
    assert_int_equal(v, 5);
    v = 42;
    assert_int_equal(jf_int(&top, "big", true, 1, 10, &v), -1);
    assert_int_equal(v, 42); /* untouched unless valid */
    char dst[3];
    assert_int_equal(jf_string_copy(&top, "name", true, dst, sizeof dst), 1);
    assert_string_equal(dst, "w1");
    assert_int_equal(jf_string_copy(&top, "missing", false, dst, sizeof dst), 0);
    assert_string_equal(dst, "");
    assert_int_equal(jf_string_copy(&top, "txt", true, dst, 1), -1);
    assert_string_equal(err, "field 'txt' is 1 bytes long, the limit is 0");
    assert_int_equal(jf_array(&top, "arr", true, 3, &(json_object *){NULL}), -1);
    assert_string_equal(err, "field 'arr' has 4 elements, the limit is 3");
    assert_int_equal(jf_string_at(&top, "arr", 2, 64, &s), -1);
    assert_string_equal(err, "field 'arr[2]' is missing");
    assert_int_equal(jf_string_at(&top, "arr", 3, 64, &s), -1);
    assert_string_equal(err, "field 'arr[3]' is empty");
    assert_int_equal(jf_string_at(&top, "arr", 0, 64, &s), 1);
    assert_string_equal(s, "a");
    size_t len = 0;
    assert_int_equal(jf_text(&top, "nul", true, &s, &len), 1);
    assert_int_equal(len, 3);
    json_object_put(o);

    /* Not an object: every field reads as absent. */
    jf_t none = {NULL, "payload", err, sizeof err};
    assert_int_equal(jf_string(&none, "name", false, 64, &s), 0);
    assert_int_equal(jf_int(&none, "n", true, 1, 10, &v), -1);
    assert_string_equal(err, "field 'payload.n' is missing");
}

static void test_execution_ids(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int rc;
        int64_t id;
        const char *err;
    } ids[] = {
        {"{\"execution_id\": 42}", 1, 42, NULL},
        {"{\"execution_id\": \"77\"}", 1, 77, NULL},
        {"{\"execution_id\": null}", 0, 0, NULL},
        {"{\"other\": 1}", 0, 0, NULL},
        {"{\"execution_id\": 0}", -1, 0,
         "field 'payload.execution_id' is 0, expected 1..9223372036854775806"},
        {"{\"execution_id\": 1.5}", -1, 0,
         "field 'payload.execution_id': expected an integer, got a fractional number"},
        {"{\"execution_id\": [1]}", -1, 0,
         "field 'payload.execution_id': expected an integer, got an array"},
        {"{\"execution_id\": \"077\"}", -1, 0,
         "field 'payload.execution_id': '077' is not a positive integer"},
        {"{\"execution_id\": \"-1\"}", -1, 0,
         "field 'payload.execution_id': '-1' is not a positive integer"},
        {"{\"execution_id\": \"\"}", -1, 0,
         "field 'payload.execution_id': '' is not a positive integer"},
        {"{\"execution_id\": \"7\\u00008\"}", -1, 0,
         "field 'payload.execution_id': '7' is not a positive integer"},
        /* A long id is quoted in part, cut on a character boundary (é is bytes 39 and 40). */
        {"{\"execution_id\": \"123456789012345678901234567890123456789\\u00e9x\"}", -1, 0,
         "field 'payload.execution_id': '123456789012345678901234567890123456789' is not a positive integer"},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        json_object *o = json_tokener_parse(ids[i].json);
        char err[256] = "";
        jf_t r = {o, "payload", err, sizeof err};
        int64_t id = 0;
        int rc = jf_execution_id(&r, false, &id);
        if (rc != ids[i].rc || id != ids[i].id || (ids[i].err && strcmp(err, ids[i].err)))
            fail_msg("%s: rc %d id %lld \"%s\"", ids[i].json, rc, (long long)id, err);
        json_object_put(o);
    }
    json_object *o = json_tokener_parse("{}");
    char err[256] = "";
    jf_t r = {o, "payload", err, sizeof err};
    int64_t id;
    assert_int_equal(jf_execution_id(&r, true, &id), -1);
    assert_string_equal(err, "field 'payload.execution_id' is missing");
    json_object_put(o);
}

static void test_nul_anywhere_is_found(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse("{\"a\": [1, {\"b\": \"x\\u0000y\"}]}");
    assert_true(jf_has_nul(o));
    json_object_put(o);
    o = json_tokener_parse("{\"a\": [1, {\"b\": \"x\\\\u0000y\"}], \"c\": null}");
    assert_false(jf_has_nul(o));
    json_object_put(o);
    assert_string_equal(jf_kind(NULL), "null");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_case),
        cmocka_unit_test(test_values_and_names),
        cmocka_unit_test(test_execution_ids),
        cmocka_unit_test(test_nul_anywhere_is_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
