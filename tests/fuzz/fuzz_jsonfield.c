/*
 * The field readers of JSON messages (warren/jsonfield.h) on any JSON object, for the keys
 * warren reads and for every key the object has. Input: one byte of limits (string length,
 * array length, integer range), then the JSON text.
 * Invariants: each reader returns 1, 0 or -1 as documented; -1 comes with a message; what is
 * returned meets the limits asked for (length, range, no NUL, no control characters).
 */
#include "fuzz.h"
#include "warren/jsonfield.h"

static const char *const known_keys[] = {
    "message_id", "message_type", "version",  "timestamp", "headers",      "payload",
    "source",     "attempt",      "trace_id", "worker_id", "execution_id", "action_ref",
    "params",     "status",       "result",   "error",     "capabilities", "capacity",
};

static void check_string(const char *s, size_t max_len, bool nonempty)
{
    size_t n = strlen(s);
    FUZZ_CHECK(n <= max_len && (!nonempty || n > 0));
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
}

static void read_key(const jf_t *r, const char *key, uint8_t lim)
{
    bool required = lim & 1;
    size_t max_len = (size_t)(lim >> 1) * 4;
    int64_t min = lim & 2 ? 1 : INT64_MIN, max = lim & 4 ? INT32_MAX : INT64_MAX - 1;
    json_object *v;
    const char *s;
    int64_t i;
    size_t len;
    char dst[48];
    int rc;

#define RC_OK(rc) FUZZ_CHECK((rc) == 1 || (rc) == 0 || (rc) == -1)
#define ERR_OK(rc)                                                                                 \
    do {                                                                                           \
        RC_OK(rc);                                                                                 \
        if ((rc) < 0)                                                                              \
            fuzz_check_err(r->err, r->errlen);                                                     \
        FUZZ_CHECK(!(required && (rc) == 0));                                                      \
    } while (0)

    rc = jf_value(r, key, required, &v);
    ERR_OK(rc);
    rc = jf_object(r, key, required, &v);
    ERR_OK(rc);
    FUZZ_CHECK(rc != 1 || json_object_is_type(v, json_type_object));
    rc = jf_int(r, key, required, min, max, &i);
    ERR_OK(rc);
    FUZZ_CHECK(rc != 1 || (i >= min && i <= max));
    rc = jf_string(r, key, required, max_len, &s);
    ERR_OK(rc);
    if (rc == 1)
        check_string(s, max_len, required);
    rc = jf_string_copy(r, key, required, dst, sizeof dst);
    ERR_OK(rc);
    FUZZ_CHECK(strlen(dst) < sizeof dst);
    if (rc == 1)
        check_string(dst, sizeof dst - 1, required);
    rc = jf_array(r, key, required, max_len, &v);
    ERR_OK(rc);
    FUZZ_CHECK(rc != 1 ||
               (json_object_is_type(v, json_type_array) && json_object_array_length(v) <= max_len));
    if (rc == 1)
        for (size_t k = 0; k < json_object_array_length(v) && k < 8; k++) {
            int at = jf_string_at(r, key, k, max_len, &s);
            FUZZ_CHECK(at == 1 || at == -1);
            if (at == 1)
                check_string(s, max_len, true);
            else
                fuzz_check_err(r->err, r->errlen);
        }
    rc = jf_text(r, key, required, &s, &len);
    ERR_OK(rc);
    FUZZ_CHECK(rc != 1 || s[len] == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t lim = data[0];
    json_tokener *tok = json_tokener_new_ex(32);
    FUZZ_CHECK(tok != NULL);
    json_object *obj = json_tokener_parse_ex(tok, (const char *)data + 1, (int)(size - 1));
    json_tokener_free(tok);
    char err[ERRBUF_SIZE];
    jf_t r = {obj, lim & 8 ? "payload" : NULL, err, sizeof err};
    for (size_t k = 0; k < sizeof known_keys / sizeof known_keys[0]; k++)
        read_key(&r, known_keys[k], lim);
    if (json_object_is_type(obj, json_type_object)) {
        json_object_object_foreach(obj, key, val) {
            (void)val;
            read_key(&r, key, lim);
        }
    }
    int64_t id;
    int rc = jf_execution_id(&r, lim & 1, &id);
    FUZZ_CHECK(rc == 1 || rc == 0 || rc == -1);
    FUZZ_CHECK(rc != 1 || (id >= 1 && id < INT64_MAX));
    if (rc < 0)
        fuzz_check_err(err, sizeof err);
    (void)jf_kind(obj);
    (void)jf_has_nul(obj);
    json_object_put(obj);
    return 0;
}
