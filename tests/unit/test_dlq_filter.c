/* The dead-letter filter and PATCH checks the API and `warren dlq` share (warren/dlq.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "warren/dlq.h"

/* The filter of JSON text in, as JSON text; NULL with err when refused. */
static char *filter(const char *in, bool allow_ids, char *err, size_t errlen)
{
    json_object *v = json_tokener_parse(in);
    json_object *f = dlq_filter(v, allow_ids, err, errlen);
    json_object_put(v);
    char *text = f ? strdup(json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN)) : NULL;
    json_object_put(f);
    return text;
}

static void refused(const char *in, bool allow_ids, const char *want)
{
    char err[512] = "";
    char *out = filter(in, allow_ids, err, sizeof err);
    if (out || !strstr(err, want))
        fail_msg("%s: got %s / '%s', want an error with '%s'", in, out ? out : "NULL", err, want);
}

static void test_filter_normalised(void **state)
{
    (void)state;
    char err[512];
    char *out = filter("{\"reason\": \"timeout\", \"resolution\": \"pending\", \"execution_id\": "
                       "\"42\", \"since\": \"2024-05-01T00:00:00Z\", \"q\": \"boom\"}",
                       false, err, sizeof err);
    assert_non_null(out);
    json_object *f = json_tokener_parse(out);
    json_object *v;
    assert_true(json_object_object_get_ex(f, "execution_id", &v));
    assert_true(json_object_is_type(v, json_type_int));
    assert_int_equal(42, json_object_get_int64(v));
    assert_true(json_object_object_get_ex(f, "since", &v));
    assert_string_equal("2024-05-01T00:00:00.000000Z", json_object_get_string(v));
    json_object_put(f);
    free(out);
    out = filter("{}", false, err, sizeof err);
    assert_string_equal("{}", out);
    free(out);
    out = filter("{\"ids\": [1, 2, 3]}", true, err, sizeof err);
    assert_string_equal("{\"ids\":[1,2,3]}", out);
    free(out);
}

/* No filter at all (an optional member left out) is no condition; it once crashed the executor
 * on POST /api/v1/redrive-tasks without "filter". */
static void test_filter_absent(void **state)
{
    (void)state;
    char err[512] = "";
    json_object *f = dlq_filter(NULL, true, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(json_object_object_length(f), 0);
    json_object_put(f);
}

static void test_filter_refused(void **state)
{
    (void)state;
    refused("{\"reason\": \"expired\"}", false, "reason: unknown value 'expired' (known: ");
    refused("{\"resolution\": \"done\"}", false, "resolution: unknown value 'done'");
    refused("{\"execution_id\": -1}", false, "execution_id");
    refused("{\"execution_id\": \"abc\"}", false, "execution_id");
    refused("{\"since\": \"yesterday\"}", false, "since: an RFC 3339 date-time");
    refused("{\"queue\": \"\"}", false, "queue: empty");
    refused("{\"color\": \"red\"}", false, "unknown filter 'color'");
    refused("{\"ids\": [1]}", false, "unknown filter 'ids'");
    refused("{\"ids\": []}", true, "ids: 1 to 1000 record ids, not 0");
    refused("{\"ids\": [0]}", true, "ids[0]: a record id");
    refused("{\"ids\": [\"1\"]}", true, "ids[0]: a record id");
    refused("[1]", true, "a filter is a JSON object, not an array");
    char ids[8000] = "{\"ids\": [1";
    for (int i = 2; i <= DLQ_IDS_MAX + 1; i++)
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), ",%d", i);
    strcat(ids, "]}");
    refused(ids, true, "not 1001");
}

static void patch_refused(const char *in, const char *want)
{
    char err[512] = "";
    json_object *v = json_tokener_parse(in);
    int rc = dlq_patch_check(v, err, sizeof err);
    json_object_put(v);
    if (rc == 0 || !strstr(err, want))
        fail_msg("%s: got %d '%s', want '%s'", in, rc, err, want);
}

static void test_patch(void **state)
{
    (void)state;
    char err[512];
    json_object *v = json_tokener_parse("{\"resolution\": \"investigating\", \"notes\": null, "
                                        "\"metadata\": {\"ticket\": 1}}");
    assert_int_equal(0, dlq_patch_check(v, err, sizeof err));
    json_object_put(v);
    patch_refused("{}", "nothing to change");
    patch_refused("{\"resolution\": \"fixed\"}", "resolution: one of pending, investigating");
    patch_refused("{\"resolution\": 1}", "resolution: one of");
    patch_refused("{\"notes\": 5}", "notes: text");
    patch_refused("{\"metadata\": []}", "metadata: a JSON object, not an array");
    patch_refused("{\"by\": \"me\"}", "unknown field 'by'");
    patch_refused("[]", "the body is a JSON object");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filter_normalised),
        cmocka_unit_test(test_filter_absent),
        cmocka_unit_test(test_filter_refused),
        cmocka_unit_test(test_patch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
