/*
 * The handler output path of the worker (worker/capture.h): a handler's stdout and stderr in
 * chunks through a bounded capture, the captured text, and the JSON result shaped from it.
 * Input: one byte of options (cap, head or tail, truncated, empty_is_object), then the output;
 * every 0xFF byte in it ends a chunk, as separate reads from the pipe would.
 * Invariants: the capture keeps exactly the first (head) or last (tail) cap bytes, and says so
 * when it dropped any; its text and every result are valid UTF-8; a result is one JSON value
 * that json-c reads: the trimmed output itself, or {"output": ...} around it.
 */
#include <json-c/json.h>
#include "fuzz.h"
#include "warren/utf8.h"
#include "worker/capture.h"

/* Whether json-c reads text as exactly one JSON value (null is a NULL object in json-c). */
static bool json_c_reads(const char *text, size_t len)
{
    json_tokener *tok = json_tokener_new_ex(128);
    FUZZ_CHECK(tok != NULL);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *v = json_tokener_parse_ex(tok, text, (int)len);
    size_t end = json_tokener_get_parse_end(tok);
    if (json_tokener_get_error(tok) == json_tokener_continue) {
        v = json_tokener_parse_ex(tok, "", 1); /* the end of the input completes a number */
        end = len;
    }
    bool ok = json_tokener_get_error(tok) == json_tokener_success && end >= len;
    json_tokener_free(tok);
    json_object_put(v);
    return ok;
}

static void check_result(const char *out, size_t in_len, bool truncated)
{
    size_t n = strlen(out);
    FUZZ_CHECK(utf8_is_text(out, n));
    if (!json_c_reads(out, n)) {
        fprintf(stderr, "result json-c cannot read: %s\n", out);
        abort();
    }
    if (truncated) {
        json_object *v = json_tokener_parse(out), *t;
        FUZZ_CHECK(json_object_object_get_ex(v, "truncated", &t) && json_object_get_boolean(t));
        json_object_put(v);
    }
    FUZZ_CHECK(n <= 6 * in_len + 64); /* escaping at most sextuples a byte */
}

/* The capture against a model: all bytes kept, then the expected head or tail compared. */
static void check_capture(const uint8_t *data, size_t size, size_t cap, bool keep_tail)
{
    capture_t c;
    capture_init(&c, cap, keep_tail);
    size_t total = 0, start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != 0xFF)
            continue;
        FUZZ_CHECK(capture_append(&c, data + start, i - start) == 0);
        total += i - start;
        start = i + 1;
        FUZZ_CHECK(c.len <= cap);
    }
    /* The bytes the model keeps: the input without its 0xFF separators. */
    uint8_t *all = malloc(total + 1);
    FUZZ_CHECK(all != NULL);
    size_t k = 0;
    for (size_t i = 0; i < size; i++)
        if (data[i] != 0xFF)
            all[k++] = data[i];
    size_t keep = total < cap ? total : cap;
    FUZZ_CHECK(c.len == keep);
    FUZZ_CHECK(c.truncated == (total > cap));
    FUZZ_CHECK(keep == 0 || !memcmp(c.buf, keep_tail ? all + total - keep : all, keep));
    char *text = capture_text(&c);
    FUZZ_CHECK(text != NULL);
    FUZZ_CHECK(utf8_is_text(text, strlen(text)));
    bool oom;
    char *out = capture_result_json(c.buf ? c.buf : "", c.len, c.truncated, true, &oom);
    FUZZ_CHECK(out != NULL && !oom);
    check_result(out, c.len, c.truncated);
    free(out);
    free(text);
    free(all);
    capture_reset(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    data++, size--;
    bool keep_tail = opt & 1, truncated = opt & 2, empty_is_object = opt & 4;
    size_t cap = 1 + (opt >> 3); /* 1..32: small, so cuts fall everywhere */

    /* The result of output as the runner hands it over (no separators meant here). */
    bool oom;
    char *out = capture_result_json((const char *)data, size, truncated, empty_is_object, &oom);
    FUZZ_CHECK(!oom);
    if (out) {
        check_result(out, size, truncated);
        /* Either the trimmed output itself or the wrapper around it, nothing else. */
        const char *t = (const char *)data;
        size_t n = size;
        while (n > 0 && strchr(" \t\r\n", t[0]) && t[0])
            t++, n--;
        while (n > 0 && strchr(" \t\r\n", t[n - 1]) && t[n - 1])
            n--;
        bool itself = !truncated && strlen(out) == n && !memcmp(out, t, n);
        FUZZ_CHECK(itself || !strncmp(out, "{\"output\":", 10) || !strcmp(out, "{}"));
        free(out);
    } else {
        FUZZ_CHECK(!empty_is_object && !truncated);
    }

    check_capture(data, size, cap, keep_tail);

    /* An in-process module's error text, cut to a small buffer. */
    char *s = fuzz_cstr(data, size), dst[24];
    capture_error_text(s, dst, (size_t)1 + opt % sizeof dst);
    FUZZ_CHECK(utf8_is_text(dst, strlen(dst)));
    free(s);
    return 0;
}
