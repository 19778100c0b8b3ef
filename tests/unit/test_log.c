/* Logging: one line per call in both formats, whatever bytes the message and fields carry. */
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "warren/log.h"

/* Text that tries to end its line and forge another, plus a terminal escape and a DEL. */
#define FORGED_MSG "connect failed\n2024-01-01T00:00:00.000Z info  cli: all good"
#define FORGED_VAL "refused\r\nfake=1 \x1b[2J\x7f end"

static char *captured;

/* Run one logging call with stderr sent to a file; captured gets what was written. */
static void capture(log_format_t format, void (*emit)(void))
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    log_setup(LOG_DEBUG, format);
    emit();
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    long len = ftell(tmp);
    assert_true(len > 0);
    free(captured);
    captured = calloc(1, (size_t)len + 1);
    assert_non_null(captured);
    rewind(tmp);
    assert_int_equal(fread(captured, 1, (size_t)len, tmp), (size_t)len);
    fclose(tmp);
}

static void emit_kv(void)
{
    log_kv(LOG_WARN, FORGED_MSG, "error", FORGED_VAL, "path\nx", "a\\b", "empty", "", NULL);
}

static void emit_msg(void)
{
    log_warn("handler said: %s", "line1\nline2\ttab");
}

/* Exactly one line: the only newline is the last byte, and no other control character. */
static void assert_one_line(const char *s)
{
    size_t len = strlen(s);
    assert_true(len > 1);
    assert_int_equal(s[len - 1], '\n');
    for (size_t i = 0; i + 1 < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            fail_msg("control byte 0x%02x at %zu in: %s", (unsigned char)s[i], i, s);
}

static void test_text_escapes(void **state)
{
    (void)state;
    capture(LOG_FORMAT_TEXT, emit_kv);
    assert_one_line(captured);
    assert_non_null(strstr(
        captured, " warn  warren: connect failed\\n2024-01-01T00:00:00.000Z info  cli: all good "));
    /* a value with spaces or '=' is quoted, so "fake=1" cannot pose as a field */
    assert_non_null(strstr(captured, " error=\"refused\\r\\nfake=1 \\x1b[2J\\x7f end\""));
    assert_non_null(strstr(captured, " path\\nx=a\\\\b "));
    assert_non_null(strstr(captured, " empty=\"\"\n"));

    capture(LOG_FORMAT_TEXT, emit_msg);
    assert_one_line(captured);
    assert_non_null(strstr(captured, "handler said: line1\\nline2\\ttab\n"));
}

static const char *json_field(json_object *o, const char *key)
{
    json_object *v;
    assert_true(json_object_object_get_ex(o, key, &v));
    return json_object_get_string(v);
}

static void test_json_escapes(void **state)
{
    (void)state;
    capture(LOG_FORMAT_JSON, emit_kv);
    assert_one_line(captured);
    json_object *o = json_tokener_parse(captured);
    assert_non_null(o);
    assert_string_equal(json_field(o, "msg"), FORGED_MSG);
    assert_string_equal(json_field(o, "error"), FORGED_VAL);
    assert_string_equal(json_field(o, "path\nx"), "a\\b");
    assert_string_equal(json_field(o, "level"), "warn");
    json_object_put(o);

    capture(LOG_FORMAT_JSON, emit_msg);
    assert_one_line(captured);
    o = json_tokener_parse(captured);
    assert_non_null(o);
    assert_string_equal(json_field(o, "msg"), "handler said: line1\nline2\ttab");
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_escapes),
        cmocka_unit_test(test_json_escapes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(captured);
    return rc;
}
