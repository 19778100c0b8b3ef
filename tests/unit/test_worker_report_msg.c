/* The worker's message bodies: fields, raw results, and results that do not fit an envelope. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "warren/envelope.h"
#include "worker/report_msg.h"

#define INCARNATION "0123456789abcdef0123456789abcdef"

static report_msg_completion_t completion(const char *result_json)
{
    return (report_msg_completion_t){
        .worker_id = "w1",
        .execution_id = 42,
        .attempt = 3,
        .status = "completed",
        .result_json = result_json,
        .exit_code = 0,
        .stderr_tail = "line\n",
        .started_at = "2024-01-02T03:04:05.000Z",
        .ended_at = "2024-01-02T03:04:06.000Z",
        .duration_ms = 1000,
        .trace_id = "t-1",
        .incarnation = INCARNATION,
    };
}

/* Decode body as the executor would; the caller frees e. */
static void decode(const char *body, size_t len, envelope_t *e)
{
    char err[256] = "";
    int rc = envelope_decode(body, len, e, err, sizeof err);
    if (rc != 0)
        fail_msg("envelope_decode: %s", err);
}

static json_object *field(json_object *o, const char *key)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(o, key, &v));
    return v;
}

static const char *str(json_object *o, const char *key)
{
    return json_object_get_string(field(o, key));
}

static int64_t num(json_object *o, const char *key)
{
    return json_object_get_int64(field(o, key));
}

static void test_running(void **state)
{
    (void)state;
    report_msg_running_t r = {"w1", 42, 3, "2024-01-02T03:04:05.000Z", "t-1", INCARNATION, 30};
    size_t len = 0;
    char *body = report_msg_running(&r, "m-1", &len);
    assert_non_null(body);
    envelope_t e;
    decode(body, len, &e);
    assert_int_equal(e.type, MSG_EXECUTION_STATUS_CHANGED);
    assert_string_equal(e.message_id, "m-1");
    assert_string_equal(e.correlation_id, "42");
    assert_string_equal(e.source, REPORT_MSG_SOURCE);
    assert_string_equal(e.trace_id, "t-1");
    assert_int_equal(e.attempt, 3);
    assert_int_equal(num(e.payload, "execution_id"), 42);
    assert_int_equal(num(e.payload, "attempt"), 3);
    assert_string_equal(str(e.payload, "worker_id"), "w1");
    assert_string_equal(str(e.payload, "status"), "running");
    assert_string_equal(str(e.payload, "started_at"), r.started_at);
    assert_string_equal(str(e.payload, "incarnation"), INCARNATION);
    assert_int_equal(num(e.payload, "timeout_s"), 30);
    envelope_free(&e);
    free(body);
}

static void test_completion_embeds_result_verbatim(void **state)
{
    (void)state;
    /* json-c would print 1.5 and clamp the 30-digit integer if it re-encoded the result. */
    const char *raw = "{\"n\": 1.50, \"big\": 123456789012345678901234567890, \"s\": \"\\u00e9\"}";
    report_msg_completion_t c = completion(raw);
    report_msg_fate_t fate;
    size_t len = 0;
    char *body = report_msg_completion(&c, "m-2", &len, &fate);
    assert_non_null(body);
    assert_int_equal(fate, REPORT_MSG_RESULT_KEPT);
    char want[256];
    snprintf(want, sizeof want, "\"result\":%s,", raw);
    assert_non_null(strstr(body, want));
    envelope_t e;
    decode(body, len, &e);
    assert_int_equal(e.type, MSG_EXECUTION_COMPLETED);
    assert_string_equal(str(e.payload, "status"), "completed");
    assert_string_equal(str(e.payload, "stderr_tail"), "line\n");
    assert_true(json_object_is_type(field(e.payload, "error"), json_type_null));
    assert_false(json_object_get_boolean(field(e.payload, "truncated")));
    assert_int_equal(num(e.payload, "duration_ms"), 1000);
    assert_int_equal(num(e.payload, "exit_code"), 0);
    assert_int_equal(num(e.payload, "signal"), 0);
    assert_string_equal(str(e.payload, "incarnation"), INCARNATION);
    envelope_free(&e);
    free(body);
}

static void test_completion_without_result(void **state)
{
    (void)state;
    report_msg_completion_t c = completion(NULL);
    c.status = "failed";
    c.exit_code = 7;
    c.error = "handler exited with code 7";
    report_msg_fate_t fate;
    size_t len = 0;
    char *body = report_msg_completion(&c, "m-3", &len, &fate);
    assert_non_null(body);
    envelope_t e;
    decode(body, len, &e);
    assert_true(json_object_is_type(field(e.payload, "result"), json_type_null));
    assert_string_equal(str(e.payload, "error"), c.error);
    assert_int_equal(num(e.payload, "exit_code"), 7);
    envelope_free(&e);
    free(body);
}

/* A kept completion is a deep copy; sent again, it is the same payload plus repeat: true. */
static void test_completion_kept_and_repeated(void **state)
{
    (void)state;
    char result[] = "{\"n\": 1.50}", tail[] = "err\n";
    report_msg_completion_t c = completion(result);
    c.stderr_tail = tail;
    c.error = NULL;
    report_msg_fate_t fate;
    size_t len = 0, len2 = 0, bytes = 0;
    char *first = report_msg_completion(&c, "m-a", &len, &fate);
    report_msg_completion_t *kept = report_msg_completion_keep(&c, &bytes);
    assert_non_null(kept);
    assert_true(bytes > sizeof *kept + strlen(result));
    memset(result, 'x', sizeof result - 1); /* the copy owns its strings */
    memset(tail, 'x', sizeof tail - 1);
    assert_null(kept->error);
    report_msg_completion_t again_c = *kept;
    again_c.repeat = true;
    char *again = report_msg_completion(&again_c, "m-b", &len2, &fate);
    assert_non_null(first);
    assert_non_null(again);
    envelope_t a, b;
    decode(first, len, &a);
    decode(again, len2, &b);
    assert_false(json_object_object_get_ex(a.payload, "repeat", NULL));
    assert_string_equal(b.message_id, "m-b");
    assert_true(json_object_get_boolean(field(b.payload, "repeat")));
    json_object_object_del(b.payload, "repeat");
    assert_true(json_object_equal(a.payload, b.payload));
    assert_non_null(strstr(again, "\"result\":{\"n\": 1.50}"));
    envelope_free(&a);
    envelope_free(&b);
    free(first);
    free(again);
    free(kept);
}

/* A dispatch cancelled while held never started: started_at is null. */
static void test_completion_never_started(void **state)
{
    (void)state;
    report_msg_completion_t c = completion(NULL);
    c.status = "cancelled";
    c.exit_code = -1;
    c.error = "Cancelled by request";
    c.started_at = "";
    c.duration_ms = 0;
    report_msg_fate_t fate;
    size_t len = 0;
    char *body = report_msg_completion(&c, "m-4", &len, &fate);
    assert_non_null(body);
    envelope_t e;
    decode(body, len, &e);
    assert_string_equal(str(e.payload, "status"), "cancelled");
    assert_true(json_object_is_type(field(e.payload, "started_at"), json_type_null));
    assert_string_equal(str(e.payload, "ended_at"), c.ended_at);
    assert_string_equal(str(e.payload, "error"), "Cancelled by request");
    envelope_free(&e);
    free(body);
}

static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 1);
    for (int i = 0; i < depth; i++) {
        s[i] = '[';
        s[depth + i] = ']';
    }
    s[2 * depth] = '\0';
    return s;
}

/* The deepest result kept is still one the executor's decoder accepts; one level more would
 * not be, so it travels as text. */
static void test_depth_limit_matches_the_decoder(void **state)
{
    (void)state;
    for (int depth = REPORT_MSG_RESULT_MAX_DEPTH; depth <= REPORT_MSG_RESULT_MAX_DEPTH + 1;
         depth++) {
        char *raw = nested(depth);
        report_msg_completion_t c = completion(raw);
        report_msg_fate_t fate;
        size_t len = 0;
        char *body = report_msg_completion(&c, "m-4", &len, &fate);
        assert_non_null(body);
        envelope_t e;
        decode(body, len, &e);
        json_object *result = field(e.payload, "result");
        if (depth == REPORT_MSG_RESULT_MAX_DEPTH) {
            assert_int_equal(fate, REPORT_MSG_RESULT_KEPT);
            assert_true(json_object_is_type(result, json_type_array));
        } else {
            assert_int_equal(fate, REPORT_MSG_RESULT_TOO_DEEP);
            assert_string_equal(str(result, "output"), raw);
        }
        envelope_free(&e);
        free(body);
        free(raw);
    }
    /* ... and the limit is tight: the kept body with its result one level deeper is refused. */
    char *kept = nested(REPORT_MSG_RESULT_MAX_DEPTH),
         *deeper = nested(REPORT_MSG_RESULT_MAX_DEPTH + 1);
    report_msg_completion_t c = completion(kept);
    report_msg_fate_t fate;
    size_t len = 0;
    char *body = report_msg_completion(&c, "m-4", &len, &fate);
    char *at = strstr(body, kept);
    assert_non_null(at);
    size_t head = (size_t)(at - body), tail = len - head - strlen(kept);
    char *edited = malloc(len + 3);
    memcpy(edited, body, head);
    memcpy(edited + head, deeper, strlen(deeper));
    memcpy(edited + head + strlen(deeper), at + strlen(kept), tail + 1);
    char err[256];
    envelope_t e;
    assert_int_equal(envelope_decode(edited, strlen(edited), &e, err, sizeof err), -1);
    assert_non_null(strstr(err, "deeper"));
    free(edited);
    free(body);
    free(kept);
    free(deeper);
}

/* A JSON string result of n bytes of `unit` repeated. */
static char *big_string(size_t n, const char *unit)
{
    size_t u = strlen(unit);
    char *s = malloc(n + 3);
    size_t o = 0;
    s[o++] = '"';
    while (o + u <= n + 1) {
        memcpy(s + o, unit, u);
        o += u;
    }
    s[o++] = '"';
    s[o] = '\0';
    return s;
}

static void check_cut(const char *unit)
{
    char *raw = big_string(ENVELOPE_MAX_BYTES + 4096, unit);
    report_msg_completion_t c = completion(raw);
    report_msg_fate_t fate;
    size_t len = 0;
    char *body = report_msg_completion(&c, "m-5", &len, &fate);
    assert_non_null(body);
    assert_int_equal(fate, REPORT_MSG_RESULT_TOO_LARGE);
    assert_true(len <= ENVELOPE_MAX_BYTES);
    assert_true(len > ENVELOPE_MAX_BYTES / 2); /* kept most of what fits */
    envelope_t e;
    decode(body, len, &e);
    json_object *result = field(e.payload, "result");
    const char *output = str(result, "output");
    assert_true(json_object_get_boolean(field(result, "truncated")));
    assert_true(json_object_get_boolean(field(e.payload, "truncated")));
    assert_memory_equal(output, raw, strlen(output)); /* a prefix of the text */
    envelope_free(&e);
    free(body);
    free(raw);
}

static void test_too_large_result_is_cut(void **state)
{
    (void)state;
    check_cut("a");
    check_cut("\xc3\xa9\\\""); /* é and an escaped quote: escapes grow, characters stay whole */
}

static void test_prefix_fitting(void **state)
{
    (void)state;
    assert_int_equal(report_msg_prefix_fitting("abc", 3, 10), 3);
    assert_int_equal(report_msg_prefix_fitting("abc", 3, 2), 2);
    assert_int_equal(report_msg_prefix_fitting("a\xc3\xa9", 3, 2), 1); /* never half an é */
    assert_int_equal(report_msg_prefix_fitting("a\"b", 3, 2), 1);      /* \" takes two */
    assert_int_equal(report_msg_prefix_fitting("\x01z", 2, 6), 1);     /* \u0001 takes six */
    assert_int_equal(report_msg_prefix_fitting("abc", 3, 0), 0);
}

static void test_json_depth(void **state)
{
    (void)state;
    assert_int_equal(report_msg_json_depth("1"), 0);
    assert_int_equal(report_msg_json_depth("{}"), 1);
    assert_int_equal(report_msg_json_depth("{\"a\":[{}],\"b\":[]}"), 3);
    /* brackets in strings, escaped quotes included, do not count */
    assert_int_equal(report_msg_json_depth("[\"[[[\\\"[[\"]"), 1);
}

static void test_heartbeat(void **state)
{
    (void)state;
    json_object *caps = json_object_new_array();
    json_object_array_add(caps, json_object_new_string("core.echo"));
    report_msg_heartbeat_t h = {
        "w1",       "stopping", caps, 4, 1, 10, "host-a", "1.2.3", "2024-01-02T03:04:05.000Z",
        INCARNATION};
    size_t len = 0;
    char *body = report_msg_heartbeat(&h, "m-6", &len);
    json_object_put(caps);
    assert_non_null(body);
    envelope_t e;
    decode(body, len, &e);
    assert_int_equal(e.type, MSG_WORKER_HEARTBEAT);
    assert_string_equal(e.message_id, "m-6");
    assert_string_equal(str(e.payload, "worker_id"), "w1");
    assert_string_equal(str(e.payload, "status"), "stopping");
    json_object *first = json_object_array_get_idx(field(e.payload, "capabilities"), 0);
    assert_string_equal(json_object_get_string(first), "core.echo");
    assert_int_equal(num(e.payload, "capacity"), 4);
    assert_int_equal(num(e.payload, "running"), 1);
    assert_int_equal(num(e.payload, "heartbeat_interval_s"), 10);
    assert_string_equal(str(e.payload, "host"), "host-a");
    assert_string_equal(str(e.payload, "version"), "1.2.3");
    assert_string_equal(str(e.payload, "started_at"), h.started_at);
    assert_string_equal(str(e.payload, "incarnation"), INCARNATION);
    envelope_free(&e);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_running),
        cmocka_unit_test(test_completion_embeds_result_verbatim),
        cmocka_unit_test(test_completion_without_result),
        cmocka_unit_test(test_completion_kept_and_repeated),
        cmocka_unit_test(test_completion_never_started),
        cmocka_unit_test(test_depth_limit_matches_the_decoder),
        cmocka_unit_test(test_too_large_result_is_cut),
        cmocka_unit_test(test_prefix_fitting),
        cmocka_unit_test(test_json_depth),
        cmocka_unit_test(test_heartbeat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
