/* Unit tests for the message envelope: round trips, and one refusal per malformed input. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "warren/envelope.h"

// wrap: getrandom

/* getrandom stood in for: `eintr` interrupted calls first, then failures with fail_errno, or
 * the real call when it is 0. */
typedef struct {
    int eintr, fail_errno, calls;
} rnd_t;
static rnd_t rnd;

ssize_t __real_getrandom(void *buf, size_t len, unsigned int flags);
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags);

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags)
{
    rnd.calls++;
    if (rnd.eintr > 0) {
        rnd.eintr--;
        errno = EINTR;
        return -1;
    }
    if (rnd.fail_errno) {
        errno = rnd.fail_errno;
        return -1;
    }
    return __real_getrandom(buf, len, flags);
}

/* A valid envelope as a mutable JSON object, for tests that break one field at a time. */
static json_object *valid_root(void)
{
    return json_tokener_parse(
        "{\"message_id\":\"6f1c1a52-3b7e-4c56-9a0e-0d1b2c3d4e5f\",\"correlation_id\":null,"
        "\"message_type\":\"ExecutionRequested\",\"version\":1,"
        "\"timestamp\":\"2024-05-06T07:08:09.123Z\","
        "\"headers\":{\"source\":\"executor\",\"attempt\":1,\"trace_id\":\"t-1\"},"
        "\"payload\":{\"execution_id\":42,\"worker_id\":\"w1\",\"action_ref\":\"core.echo\","
        "\"params\":{\"x\":1},\"attempt\":1,\"timeout_s\":30}}");
}

static int decode_text(const char *text, envelope_t *e, char *err, size_t errlen)
{
    return envelope_decode(text, strlen(text), e, err, errlen);
}

/* Decode root and expect failure with `want` in the message. */
static void expect_refused(json_object *root, const char *want)
{
    char err[ERRBUF_SIZE] = "";
    envelope_t e;
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    int rc = decode_text(text, &e, err, sizeof err);
    if (rc == 0 || !strstr(err, want))
        fail_msg("body %s: want error containing \"%s\", got rc=%d \"%s\"", text, want, rc, err);
    assert_null(e.payload);
}

static void expect_text_refused(const char *text, size_t len, const char *want)
{
    char err[ERRBUF_SIZE] = "";
    envelope_t e;
    int rc = envelope_decode(text, len, &e, err, sizeof err);
    if (rc == 0 || !strstr(err, want))
        fail_msg("want error containing \"%s\", got rc=%d \"%s\"", want, rc, err);
    assert_null(e.payload);
}

static void test_round_trip(void **state)
{
    (void)state;
    for (msg_type_t t = MSG_EXECUTION_REQUESTED; t <= MSG_EXECUTION_CANCEL_REQUESTED; t++) {
        json_object *payload = json_object_new_object();
        json_object_object_add(payload, "k", json_object_new_string("v\u00e9\"\\/"));
        size_t len = 0;
        char *text = envelope_encode(t, "m-1", "c-1", "worker-7", 3, "tr-9", payload, &len);
        assert_non_null(text);
        assert_int_equal(len, strlen(text));

        envelope_t e;
        char err[ERRBUF_SIZE] = "";
        assert_int_equal(envelope_decode(text, len, &e, err, sizeof err), 0);
        assert_int_equal(e.type, t);
        assert_string_equal(e.type_name, msg_type_name(t));
        assert_string_equal(e.message_id, "m-1");
        assert_string_equal(e.correlation_id, "c-1");
        assert_string_equal(e.source, "worker-7");
        assert_int_equal(e.attempt, 3);
        assert_string_equal(e.trace_id, "tr-9");
        assert_int_equal(e.version, ENVELOPE_VERSION);
        assert_string_equal(json_object_get_string(json_object_object_get(e.payload, "k")),
                            "v\u00e9\"\\/");
        envelope_free(&e);
        assert_null(e.payload);
        free(text);
    }
}

static void test_encode_defaults(void **state)
{
    (void)state;
    size_t len;
    char *text = envelope_encode(MSG_WORKER_HEARTBEAT, NULL, NULL, "w", 0, NULL, NULL, &len);
    assert_non_null(text);
    envelope_t e;
    char err[ERRBUF_SIZE];
    assert_int_equal(envelope_decode(text, len, &e, err, sizeof err), 0);
    assert_int_equal(strlen(e.message_id), 36);
    assert_int_equal(e.message_id[14], '4'); /* UUID version 4 */
    assert_string_equal(e.correlation_id, "");
    assert_string_equal(e.trace_id, "");
    assert_true(json_object_is_type(e.payload, json_type_object));
    assert_int_equal(json_object_object_length(e.payload), 0);
    envelope_free(&e);
    free(text);

    /* Unknown types are never sent. */
    assert_null(envelope_encode(MSG_UNKNOWN, NULL, NULL, "w", 0, NULL, NULL, &len));
}

static void test_unknown_type_kept(void **state)
{
    (void)state;
    json_object *root = valid_root();
    json_object_object_add(root, "message_type", json_object_new_string("PackRegistered"));
    const char *text = json_object_to_json_string(root);
    envelope_t e;
    char err[ERRBUF_SIZE];
    assert_int_equal(decode_text(text, &e, err, sizeof err), 0);
    assert_int_equal(e.type, MSG_UNKNOWN);
    assert_string_equal(e.type_name, "PackRegistered");
    envelope_free(&e);
    json_object_put(root);
}

static void test_type_names(void **state)
{
    (void)state;
    assert_int_equal(msg_type_parse("ExecutionCompleted"), MSG_EXECUTION_COMPLETED);
    assert_int_equal(msg_type_parse("executioncompleted"), MSG_UNKNOWN);
    assert_int_equal(msg_type_parse(NULL), MSG_UNKNOWN);
    assert_string_equal(msg_type_name((msg_type_t)99), "Unknown");
}

/* One broken field at a time: {field path, replacement JSON or NULL to delete, error}. */
static const struct {
    const char *obj; /* NULL: top level, else the member holding the field */
    const char *key;
    const char *value;
    const char *want;
} broken[] = {
    {NULL, "message_id", NULL, "field 'message_id' is missing"},
    {NULL, "message_id", "null", "field 'message_id' is missing"},
    {NULL, "message_id", "7", "field 'message_id': expected a string, got an integer"},
    {NULL, "message_id", "\"\"", "field 'message_id' is empty"},
    {NULL, "message_id", "\"a\\u0000b\"", "field 'message_id' contains a NUL"},
    {NULL, "message_id", "\"a\\nb\"", "field 'message_id' contains a control character"},
    {NULL, "correlation_id", "[]", "field 'correlation_id': expected a string, got an array"},
    {NULL, "message_type", NULL, "field 'message_type' is missing"},
    {NULL, "message_type", "{}", "field 'message_type': expected a string, got an object"},
    {NULL, "version", NULL, "field 'version' is missing"},
    {NULL, "version", "\"1\"", "field 'version': expected an integer, got a string"},
    {NULL, "version", "1.5", "field 'version': expected an integer, got a fractional number"},
    {NULL, "version", "0", "field 'version' is 0, expected 1.."},
    {NULL, "timestamp", NULL, "field 'timestamp' is missing"},
    {NULL, "timestamp", "true", "field 'timestamp': expected a string, got a boolean"},
    {NULL, "timestamp", "\"2024-05-06 07:08:09Z\"", "field 'timestamp'"},
    {NULL, "timestamp", "\"2023-02-29T07:08:09Z\"", "not an RFC 3339 date-time"},
    {NULL, "timestamp", "\"2024-13-06T07:08:09Z\"", "not an RFC 3339 date-time"},
    {NULL, "timestamp", "\"2024-05-06T07:08:09.Z\"", "not an RFC 3339 date-time"},
    {NULL, "timestamp", "\"2024-05-06T07:08:09.1234567891Z\"", "not an RFC 3339 date-time"},
    {NULL, "timestamp", "\"2024-05-06T07:08:09Zjunk\"", "not an RFC 3339 date-time"},
    {NULL, "headers", NULL, "field 'headers' is missing"},
    {NULL, "headers", "\"h\"", "field 'headers': expected an object, got a string"},
    {"headers", "source", NULL, "field 'headers.source' is missing"},
    {"headers", "source", "1", "field 'headers.source': expected a string"},
    {"headers", "attempt", NULL, "field 'headers.attempt' is missing"},
    {"headers", "attempt", "-1", "field 'headers.attempt' is -1, expected 0.."},
    {"headers", "attempt", "99999999999", "field 'headers.attempt' is 99999999999"},
    {"headers", "trace_id", "5", "field 'headers.trace_id': expected a string"},
    {NULL, "payload", NULL, "field 'payload' is missing"},
    {NULL, "payload", "[1]", "field 'payload': expected an object, got an array"},
};

static void test_each_malformed_field(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        json_object *root = valid_root();
        json_object *holder = broken[i].obj ? json_object_object_get(root, broken[i].obj) : root;
        if (broken[i].value)
            json_object_object_add(holder, broken[i].key, json_tokener_parse(broken[i].value));
        else
            json_object_object_del(holder, broken[i].key);
        expect_refused(root, broken[i].want);
        json_object_put(root);
    }
}

static void test_string_too_long(void **state)
{
    (void)state;
    char id[ENVELOPE_ID_MAX + 1];
    memset(id, 'a', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    json_object *root = valid_root();
    json_object_object_add(json_object_object_get(root, "headers"), "trace_id",
                           json_object_new_string(id));
    expect_refused(root, "field 'headers.trace_id' is 128 bytes long, the limit is 127");
    json_object_put(root);
}

static void test_truncated(void **state)
{
    (void)state;
    json_object *root = valid_root();
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    size_t n = strlen(text);
    /* Every proper prefix is refused, and none decodes as something else. */
    for (size_t cut = 1; cut < n; cut++) {
        char err[ERRBUF_SIZE] = "";
        envelope_t e;
        if (envelope_decode(text, cut, &e, err, sizeof err) == 0)
            fail_msg("prefix of %zu bytes decoded", cut);
        assert_null(e.payload);
    }
    expect_text_refused(text, n / 2, "truncated JSON");
    expect_text_refused(text, n - 1, "truncated JSON");
    json_object_put(root);
}

static void test_trailing_garbage(void **state)
{
    (void)state;
    json_object *root = valid_root();
    char buf[2048];
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    assert_non_null(text);
    if (!text) /* unreachable; tells the compiler (sanitizer builds warn on a null %s) */
        return;
    size_t n = strlen(text);

    snprintf(buf, sizeof buf, "%s x", text);
    expect_text_refused(buf, strlen(buf), "trailing data after the JSON value at byte");
    snprintf(buf, sizeof buf, "%s{}", text);
    expect_text_refused(buf, strlen(buf), "trailing data");

    /* Whitespace around the value is fine. */
    snprintf(buf, sizeof buf, " \n%s \r\n\t", text);
    envelope_t e;
    char err[ERRBUF_SIZE];
    assert_int_equal(envelope_decode(buf, strlen(buf), &e, err, sizeof err), 0);
    envelope_free(&e);

    /* A NUL after the value is not whitespace. */
    memcpy(buf, text, n);
    buf[n] = '\0';
    expect_text_refused(buf, n + 1, "NUL byte at byte");
    json_object_put(root);
}

static void test_not_json_or_not_object(void **state)
{
    (void)state;
    expect_text_refused("", 0, "body is empty");
    expect_text_refused("[]", 2, "body is an array, expected a JSON object");
    expect_text_refused("123", 3, "body is an integer, expected a JSON object");
    expect_text_refused("\"s\"", 3, "body is a string, expected a JSON object");
    expect_text_refused("null", 4, "body is null, expected a JSON object");
    expect_text_refused("{\"a\":1,}", 8, "not valid JSON at byte");
    expect_text_refused("{\"a\" 1}", 7, "not valid JSON at byte");
    expect_text_refused("nonsense", 8, "not valid JSON");
}

/* Found by tests/fuzz/fuzz_envelope.c: json-c takes NaN and Infinity even in strict mode, and a
 * report whose result held one failed the executor's batch (jsonb refuses them). */
static void test_non_numbers_refused(void **state)
{
    (void)state;
    static const char head[] =
        "{\"message_id\":\"m\",\"message_type\":\"ExecutionCompleted\",\"version\":1,"
        "\"timestamp\":\"2024-05-06T07:08:09.123Z\",\"headers\":{\"source\":\"w1\",\"attempt\":1},"
        "\"payload\":{\"result\":";
    static const char *const bad[] = {"NaN", "Infinity", "-Infinity", "[1,{\"y\":NaN}]"};
    char text[512], err[ERRBUF_SIZE];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s}}", head, bad[i]);
        expect_text_refused(text, strlen(text), "it holds NaN or Infinity");
    }
    /* Too large for a double is still a number. */
    envelope_t e;
    snprintf(text, sizeof text, "%s[-1e400,1e400]}}", head);
    assert_int_equal(decode_text(text, &e, err, sizeof err), 0);
    envelope_free(&e);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\xc3\x28",         /* bad continuation */
        "\xc0\xaf",         /* overlong '/' */
        "\xed\xa0\x80",     /* UTF-16 surrogate */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "\xff",
        "\xe2\x82", /* cut short at end of string */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char buf[256];
        int n = snprintf(buf, sizeof buf, "{\"message_id\":\"%s\"}", bad[i]);
        expect_text_refused(buf, (size_t)n, "not valid UTF-8 at byte 15");
    }
}

static void test_oversize(void **state)
{
    (void)state;
    size_t big = ENVELOPE_MAX_BYTES;
    char *filler = malloc(big + 1);
    assert_non_null(filler);
    memset(filler, 'x', big);
    filler[big] = '\0';

    json_object *root = valid_root();
    json_object_object_add(json_object_object_get(root, "payload"), "blob",
                           json_object_new_string(filler));
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    expect_text_refused(text, strlen(text), "the limit is 1048576");
    json_object_put(root);

    /* The encoder refuses to build what every peer would refuse to read. */
    json_object *payload = json_object_new_object();
    json_object_object_add(payload, "blob", json_object_new_string(filler));
    size_t len;
    assert_null(envelope_encode(MSG_EXECUTION_COMPLETED, NULL, NULL, "w", 1, NULL, payload, &len));
    free(filler);
}

/* Wrap a number in `levels` arrays as params: envelope and payload are two containers more. */
static char *nested_body(int levels)
{
    size_t cap = 512 + 2 * (size_t)levels;
    char *buf = malloc(cap);
    size_t n = (size_t)snprintf(
        buf, cap,
        "{\"message_id\":\"m\",\"message_type\":\"X\",\"version\":1,"
        "\"timestamp\":\"2024-05-06T07:08:09Z\",\"headers\":{\"source\":\"s\",\"attempt\":0},"
        "\"payload\":{\"params\":");
    for (int i = 0; i < levels; i++)
        buf[n++] = '[';
    buf[n++] = '0';
    for (int i = 0; i < levels; i++)
        buf[n++] = ']';
    snprintf(buf + n, cap - n, "}}");
    return buf;
}

static void test_deep_nesting(void **state)
{
    (void)state;
    char *ok = nested_body(ENVELOPE_MAX_DEPTH - 3); /* 31 containers: the deepest accepted */
    envelope_t e;
    char err[ERRBUF_SIZE] = "";
    assert_int_equal(envelope_decode(ok, strlen(ok), &e, err, sizeof err), 0);
    envelope_free(&e);
    free(ok);

    char *deep = nested_body(ENVELOPE_MAX_DEPTH - 2);
    expect_text_refused(deep, strlen(deep), "nests deeper than 32 levels");
    free(deep);
    deep = nested_body(100000);
    expect_text_refused(deep, strlen(deep), "nests deeper than 32 levels");
    free(deep);
}

/* The envelope reads its timestamp with ts_parse (every form is in test_timestamp). */
static void test_timestamp_forms(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t us;
    } good[] = {
        {"2024-05-06T07:08:09Z", INT64_C(1714979289000000)},
        {"2024-05-06t07:08:09z", INT64_C(1714979289000000)},
        {"2024-05-06T07:08:09.123456789Z", INT64_C(1714979289123456)},
        {"2024-05-06T09:08:09+02:00", INT64_C(1714979289000000)},
        {"2024-05-06T23:59:60+00:00", INT64_C(1715040000000000)},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_object *root = valid_root();
        json_object_object_add(root, "timestamp", json_object_new_string(good[i].text));
        envelope_t e;
        char err[ERRBUF_SIZE] = "";
        const char *text = json_object_to_json_string(root);
        if (decode_text(text, &e, err, sizeof err) != 0)
            fail_msg("%s refused: %s", good[i].text, err);
        assert_string_equal(e.timestamp, good[i].text);
        assert_int_equal(e.timestamp_us, good[i].us);
        envelope_free(&e);
        json_object_put(root);
    }
}

/* ---- dispatch payload ---- */

static void test_dispatch_round_trip(void **state)
{
    (void)state;
    dispatch_t d = {.execution_id = 9007199254740993LL,
                    .attempt = 2,
                    .timeout_s = 60,
                    .start_deadline_us = 1767323045678000LL}; /* 2026-01-02T03:04:05.678Z */
    strcpy(d.worker_id, "node-1.eu_west");
    strcpy(d.action_ref, "core.http_request");
    d.params = json_tokener_parse("{\"url\":\"http://x\",\"n\":[1,2]}");
    json_object *p = dispatch_to_payload(&d);
    json_object_put(d.params); /* the payload holds its own reference */

    /* Through the full envelope and back. */
    size_t len;
    char *text = envelope_encode(MSG_EXECUTION_REQUESTED, NULL, NULL, "executor", 2, NULL, p, &len);
    envelope_t e;
    char err[ERRBUF_SIZE] = "";
    assert_int_equal(envelope_decode(text, len, &e, err, sizeof err), 0);
    dispatch_t back;
    assert_int_equal(dispatch_from_payload(e.payload, &back, err, sizeof err), 0);
    assert_int_equal(back.execution_id, 9007199254740993LL);
    assert_string_equal(back.worker_id, "node-1.eu_west");
    assert_string_equal(back.action_ref, "core.http_request");
    assert_int_equal(back.attempt, 2);
    assert_int_equal(back.timeout_s, 60);
    assert_int_equal(back.start_deadline_us, 1767323045678000LL);
    assert_string_equal(json_object_get_string(json_object_object_get(e.payload, "start_deadline")),
                        "2026-01-02T03:04:05.678Z");
    assert_string_equal(json_object_to_json_string_ext(back.params, JSON_C_TO_STRING_PLAIN),
                        "{\"url\":\"http:\\/\\/x\",\"n\":[1,2]}");
    envelope_free(&e);
    free(text);
}

static void test_dispatch_defaults_and_string_id(void **state)
{
    (void)state;
    json_object *p = json_tokener_parse(
        "{\"execution_id\":\"123\",\"worker_id\":\"w1\",\"action_ref\":\"a\"}");
    dispatch_t d;
    char err[ERRBUF_SIZE] = "";
    assert_int_equal(dispatch_from_payload(p, &d, err, sizeof err), 0);
    assert_int_equal(d.execution_id, 123);
    assert_null(d.params);
    assert_int_equal(d.attempt, 1);
    assert_int_equal(d.timeout_s, 0);
    assert_int_equal(d.start_deadline_us, 0); /* absent: none */
    json_object *o = dispatch_to_payload(&d);
    assert_false(json_object_object_get_ex(o, "start_deadline", NULL));
    json_object_put(o);
    json_object_put(p);
}

/* Incarnations: 32 lowercase hex characters, a new one every time. */
static void test_incarnation(void **state)
{
    (void)state;
    char a[INCARNATION_LEN + 1], b[INCARNATION_LEN + 1];
    assert_int_equal(envelope_new_incarnation(a, sizeof a), 0);
    assert_int_equal(envelope_new_incarnation(b, sizeof b), 0);
    assert_true(ids_incarnation_valid(a));
    assert_string_not_equal(a, b);
}

/* Without kernel randomness (no getrandom, or a seccomp filter refusing it) no id is made: an
 * error return with an empty buffer, and an envelope that needs a new id is not built. */
static void test_no_randomness(void **state)
{
    (void)state;
    char id[40] = "old", inc[INCARNATION_LEN + 1] = "old";
    size_t len = 0;
    rnd = (rnd_t){.fail_errno = ENOSYS};
    assert_int_equal(envelope_new_id(id, sizeof id), -1);
    assert_string_equal(id, "");
    assert_int_equal(envelope_new_incarnation(inc, sizeof inc), -1);
    assert_string_equal(inc, "");
    assert_null(envelope_encode(MSG_WORKER_HEARTBEAT, NULL, NULL, "w", 0, NULL,
                                json_object_new_object(), &len));
    /* A caller's own id needs no randomness. */
    char *text = envelope_encode(MSG_WORKER_HEARTBEAT, "m-1", NULL, "w", 0, NULL, NULL, &len);
    assert_non_null(text);
    free(text);
    rnd = (rnd_t){0};
}

/* An interrupted getrandom is called again. */
static void test_randomness_interrupted(void **state)
{
    (void)state;
    char id[40];
    rnd = (rnd_t){.eintr = 2};
    assert_int_equal(envelope_new_id(id, sizeof id), 0);
    assert_int_equal(rnd.calls, 3);
    assert_int_equal(strlen(id), 36);
    rnd = (rnd_t){0};
}

static const struct {
    const char *key;
    const char *value; /* NULL: delete */
    const char *want;
} bad_dispatch[] = {
    {"execution_id", NULL, "field 'payload.execution_id' is missing"},
    {"execution_id", "0", "field 'payload.execution_id' is 0"},
    {"execution_id", "-4", "field 'payload.execution_id' is -4"},
    {"execution_id", "4.5", "field 'payload.execution_id': expected an integer"},
    {"execution_id", "99999999999999999999", "field 'payload.execution_id' is"},
    {"execution_id", "\"\"", "'' is not a positive integer"},
    {"execution_id", "\"-4\"", "'-4' is not a positive integer"},
    {"execution_id", "\"042\"", "'042' is not a positive integer"},
    {"execution_id", "\"4 \"", "'4 ' is not a positive integer"},
    {"execution_id", "\"12a\"", "'12a' is not a positive integer"},
    {"execution_id", "\"9999999999999999999\"", "is not a positive integer"},
    {"execution_id", "true", "expected an integer, got a boolean"},
    {"worker_id", NULL, "field 'payload.worker_id' is missing"},
    {"worker_id", "\"w*\"", "'w*' is not a valid worker id"},
    {"worker_id", "\"a..b\"", "is not a valid worker id"},
    {"action_ref", NULL, "field 'payload.action_ref' is missing"},
    {"action_ref", "\"\"", "field 'payload.action_ref' is empty"},
    {"params", "[1]", "field 'payload.params': expected an object, got an array"},
    {"attempt", "0", "field 'payload.attempt' is 0, expected 1.."},
    {"timeout_s", "-1", "field 'payload.timeout_s' is -1"},
    {"timeout_s", "\"30\"", "field 'payload.timeout_s': expected an integer, got a string"},
    {"start_deadline", "\"tomorrow\"", "'tomorrow' is not an RFC 3339 date-time"},
    {"start_deadline", "1767323045", "field 'payload.start_deadline': expected a string"},
};

static void test_dispatch_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_dispatch / sizeof bad_dispatch[0]; i++) {
        json_object *root = valid_root();
        json_object *p = json_object_object_get(root, "payload");
        if (bad_dispatch[i].value)
            json_object_object_add(p, bad_dispatch[i].key,
                                   json_tokener_parse(bad_dispatch[i].value));
        else
            json_object_object_del(p, bad_dispatch[i].key);
        dispatch_t d;
        char err[ERRBUF_SIZE] = "";
        int rc = dispatch_from_payload(p, &d, err, sizeof err);
        if (rc == 0 || !strstr(err, bad_dispatch[i].want))
            fail_msg("%s=%s: want \"%s\", got rc=%d \"%s\"", bad_dispatch[i].key,
                     bad_dispatch[i].value ? bad_dispatch[i].value : "(deleted)",
                     bad_dispatch[i].want, rc, err);
        json_object_put(root);
    }
    dispatch_t d;
    char err[ERRBUF_SIZE] = "";
    assert_int_equal(dispatch_from_payload(NULL, &d, err, sizeof err), -1);
    assert_string_equal(err, "field 'payload' is missing");
}

static void test_cancel_payload(void **state)
{
    (void)state;
    json_object *p = json_tokener_parse("{\"execution_id\": 42, \"attempt\": 2, \"worker_id\": "
                                        "\"w1\", \"requested_by\": \"ops\"}");
    cancel_request_t c;
    char err[ERRBUF_SIZE] = "";
    assert_int_equal(cancel_from_payload(p, &c, err, sizeof err), 0);
    assert_int_equal(c.execution_id, 42);
    assert_int_equal(c.attempt, 2);
    assert_string_equal(c.worker_id, "w1");
    assert_string_equal(c.requested_by, "ops");
    json_object_put(p);

    /* What the executor sends is what the worker reads. */
    cancel_request_t sent = {.execution_id = 9007199254740993LL, .attempt = 3};
    snprintf(sent.worker_id, sizeof sent.worker_id, "w-2.x");
    snprintf(sent.requested_by, sizeof sent.requested_by, "cli:ops");
    p = cancel_to_payload(&sent);
    assert_int_equal(cancel_from_payload(p, &c, err, sizeof err), 0);
    assert_true(c.execution_id == sent.execution_id);
    assert_int_equal(c.attempt, 3);
    assert_string_equal(c.worker_id, "w-2.x");
    assert_string_equal(c.requested_by, "cli:ops");
    json_object_put(p);

    p = json_tokener_parse("{\"execution_id\": \"7\", \"attempt\": 1, \"worker_id\": \"w1\"}");
    assert_int_equal(cancel_from_payload(p, &c, err, sizeof err), 0);
    assert_int_equal(c.execution_id, 7);
    assert_string_equal(c.requested_by, "");
    json_object_put(p);

    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"attempt\": 1, \"worker_id\": \"w1\"}", "field 'payload.execution_id' is missing"},
        {"{\"execution_id\": 4, \"worker_id\": \"w1\"}", "field 'payload.attempt' is missing"},
        {"{\"execution_id\": 4, \"attempt\": 0, \"worker_id\": \"w1\"}",
         "field 'payload.attempt' is 0"},
        {"{\"execution_id\": 4, \"attempt\": 1}", "field 'payload.worker_id' is missing"},
        {"{\"execution_id\": 4, \"attempt\": 1, \"worker_id\": \"w#\"}",
         "'w#' is not a valid worker id"},
        {"{\"execution_id\": 4, \"attempt\": 1, \"worker_id\": \"w1\", \"requested_by\": 3}",
         "field 'payload.requested_by': expected a string"},
        {"[1]", "field 'payload': expected an object, got an array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = json_tokener_parse(bad[i].text);
        int rc = cancel_from_payload(p, &c, err, sizeof err);
        if (rc == 0 || !strstr(err, bad[i].want))
            fail_msg("%s: want \"%s\", got rc=%d \"%s\"", bad[i].text, bad[i].want, rc, err);
        json_object_put(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_encode_defaults),
        cmocka_unit_test(test_unknown_type_kept),
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_each_malformed_field),
        cmocka_unit_test(test_string_too_long),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_trailing_garbage),
        cmocka_unit_test(test_not_json_or_not_object),
        cmocka_unit_test(test_non_numbers_refused),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_timestamp_forms),
        cmocka_unit_test(test_dispatch_round_trip),
        cmocka_unit_test(test_dispatch_defaults_and_string_id),
        cmocka_unit_test(test_dispatch_malformed),
        cmocka_unit_test(test_incarnation),
        cmocka_unit_test(test_no_randomness),
        cmocka_unit_test(test_randomness_interrupted),
        cmocka_unit_test(test_cancel_payload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
