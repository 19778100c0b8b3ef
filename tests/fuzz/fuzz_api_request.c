/*
 * The pure parts of the executor's API request handling (warren/http.h, executor/api.h,
 * executor/api_keys.h): route matching of a request path, the body as JSON and the submission
 * checks, the API keys of api.keys and a keys file, the listen address and the secret compare.
 * Input: one byte choosing the part (mod 6), the rest its text:
 *   0 a path against every route of the API;  1 http_split_hostport;
 *   2 api_keys_add_list;  3 api_keys_add_file_text;  4 a request body through api_parse_json and
 *   api_submissions;  5 http_secret_equal of the text before and after the first NUL.
 * Invariants: a matched path is the pattern with its captures put back, each capture a non-empty
 * segment within the buffer; a split address has a port of 0-65535 and a host taken from the
 * text; every key accepted has a valid name, scope and secret and is found by its secret; a
 * refusal says why; an accepted body has no NUL in its strings and serialises as valid UTF-8;
 * every accepted submission gives one row with its action_ref; the compare is strcmp's equality.
 */
#include "executor/api.h"
#include "executor/api_keys.h"
#include "fuzz.h"
#include "warren/http.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

static const char *const patterns[] = {
    "/livez",
    "/readyz",
    "/metrics",
    "/api/v1/executions",
    "/api/v1/executions/{}",
    "/api/v1/executions/{}/cancel",
    "/api/v1/workers",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_setup(LOG_ERROR, LOG_FORMAT_JSON);
    return 0;
}

static void route(const char *path)
{
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
        const char *params[HTTP_MAX_PARAMS] = {0};
        char buf[64];
        if (!http_route_match(patterns[i], path, params, buf, sizeof buf))
            continue;
        /* The pattern with every {} replaced by its capture gives the path back. */
        char rebuilt[256];
        size_t used = 0, n = 0;
        for (const char *p = patterns[i]; *p;) {
            const char *s = p;
            size_t len = 1;
            if (!strncmp(p, "{}", 2)) {
                FUZZ_CHECK(n < HTTP_MAX_PARAMS && params[n] != NULL);
                FUZZ_CHECK(params[n] >= buf && params[n] < buf + sizeof buf);
                FUZZ_CHECK(memchr(params[n], '\0', (size_t)(buf + sizeof buf - params[n])));
                s = params[n++];
                len = strlen(s);
                FUZZ_CHECK(len > 0 && !strchr(s, '/'));
                p += 2;
            } else {
                p++;
            }
            FUZZ_CHECK(used + len < sizeof rebuilt);
            memcpy(rebuilt + used, s, len);
            used += len;
        }
        rebuilt[used] = '\0';
        FUZZ_CHECK(!strcmp(rebuilt, path));
    }
}

static void hostport(const char *text)
{
    char host[64];
    memset(host, 'x', sizeof host);
    int port = -1;
    if (http_split_hostport(text, host, sizeof host, &port) != 0)
        return;
    FUZZ_CHECK(port >= 0 && port <= 65535);
    FUZZ_CHECK(memchr(host, '\0', sizeof host) != NULL);
    FUZZ_CHECK(strstr(text, host) != NULL);
    FUZZ_CHECK(!strchr(host, ':') || text[0] == '[');
}

static void keys(const char *text, bool file)
{
    api_keys_t k = {0};
    char err[ERRBUF_SIZE] = "";
    int rc = file ? api_keys_add_file_text(&k, text, "keys", err, sizeof err)
                  : api_keys_add_list(&k, text, "api.keys", err, sizeof err);
    if (rc != 0)
        fuzz_check_err(err, sizeof err);
    FUZZ_CHECK(k.n <= k.cap);
    for (size_t i = 0; i < k.n; i++) {
        const api_key_t *key = &k.keys[i];
        size_t nl = strlen(key->name), sl = strlen(key->secret);
        FUZZ_CHECK(nl > 0 && nl <= API_KEY_NAME_MAX);
        FUZZ_CHECK(strspn(key->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789_.-") == nl);
        FUZZ_CHECK(key->scope >= API_SCOPE_READ && key->scope <= API_SCOPE_ADMIN);
        FUZZ_CHECK(sl >= API_KEY_SECRET_MIN && sl <= API_KEY_SECRET_MAX);
        for (size_t j = 0; j < sl; j++)
            FUZZ_CHECK(key->secret[j] > ' ' && key->secret[j] <= '~' && key->secret[j] != ',');
        FUZZ_CHECK(api_keys_find(&k, key->secret) == key);
    }
    api_keys_free(&k);
}

static void body(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char err[ERRBUF_SIZE] = "";
    int code = 0;
    json_object *v = api_parse_json(text, size, &code, err, sizeof err);
    if (!v) {
        FUZZ_CHECK(code == 400 || code == 503);
        fuzz_check_err(err, sizeof err);
        free(text);
        return;
    }
    FUZZ_CHECK(utf8_valid(data, size, NULL));
    FUZZ_CHECK(!jf_has_nul(v));
    const char *out = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    FUZZ_CHECK(out && utf8_valid(out, strlen(out), NULL));

    json_object *rows = json_object_new_array();
    FUZZ_CHECK(rows != NULL);
    err[0] = '\0';
    if (api_submissions(v, rows, err, sizeof err) < 0) {
        fuzz_check_err(err, sizeof err);
    } else {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 1;
        FUZZ_CHECK(json_object_array_length(rows) == n);
        for (size_t i = 0; i < n; i++) {
            json_object *row = json_object_array_get_idx(rows, i), *a;
            FUZZ_CHECK(json_object_object_get_ex(row, "action_ref", &a));
            FUZZ_CHECK(json_object_is_type(a, json_type_string) && json_object_get_string_len(a));
        }
        out = json_object_to_json_string_ext(rows, JSON_C_TO_STRING_PLAIN);
        FUZZ_CHECK(out && utf8_valid(out, strlen(out), NULL));
    }
    json_object_put(rows);
    json_object_put(v);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int part = data[0] % 6;
    data++;
    size--;
    if (part == 4) {
        body(data, size);
        return 0;
    }
    char *text = fuzz_cstr(data, size);
    switch (part) {
    case 0: route(text); break;
    case 1: hostport(text); break;
    case 2: keys(text, false); break;
    case 3: keys(text, true); break;
    default: {
        const char *b = memchr(data, '\0', size) ? text + strlen(text) + 1 : "";
        FUZZ_CHECK(http_secret_equal(text, b) == !strcmp(text, b));
        break;
    }
    }
    free(text);
    return 0;
}
