/* Fields of JSON messages, read strictly, with errors that name the field (warren/jsonfield.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/utf8.h"

/* Room for a field's path in messages ("payload.capabilities[1023]"). */
#define NAME_MAX_LEN 128

const char *jf_kind(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double: return "a fractional number";
    case json_type_int: return "an integer";
    case json_type_object: return "an object";
    case json_type_array: return "an array";
    case json_type_string: return "a string";
    }
    return "an unknown JSON value";
}

static const char *field_name(const jf_t *r, const char *key, char *buf)
{
    if (r->path && *r->path)
        snprintf(buf, NAME_MAX_LEN, "%s.%s", r->path, key);
    else
        snprintf(buf, NAME_MAX_LEN, "%s", key);
    return buf;
}

static int fail(const jf_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const jf_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* r->obj[key]; absent and null both count as missing. */
static int lookup(const jf_t *r, const char *key, const char *name, bool required, json_object **v)
{
    *v = NULL;
    if (json_object_is_type(r->obj, json_type_object) && !json_object_object_get_ex(r->obj, key, v))
        *v = NULL;
    if (json_object_is_type(*v, json_type_null)) /* json-c: NULL is null too */
        *v = NULL;
    if (!*v && required)
        return fail(r, "field '%s' is missing", name);
    return *v ? 1 : 0;
}

static int want(const jf_t *r, json_object *v, json_type t, const char *tname, const char *name)
{
    if (json_object_is_type(v, t))
        return 1;
    return fail(r, "field '%s': expected %s, got %s", name, tname, jf_kind(v));
}

static int check_int(const jf_t *r, json_object *v, const char *name, int64_t min, int64_t max,
                     int64_t *out)
{
    if (want(r, v, json_type_int, "an integer", name) < 0)
        return -1;
    int64_t x = json_object_get_int64(v);
    if (x < min || x > max)
        return fail(r, "field '%s' is %lld, expected %lld..%lld", name, (long long)x,
                    (long long)min, (long long)max);
    *out = x;
    return 1;
}

/* Text that ends up in logs, headers, queue names and database rows: no NUL, no control
 * characters, bounded. */
static int check_string(const jf_t *r, json_object *v, const char *name, bool nonempty,
                        size_t max_len, const char **out)
{
    if (want(r, v, json_type_string, "a string", name) < 0)
        return -1;
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (strlen(s) != n)
        return fail(r, "field '%s' contains a NUL character", name);
    if (n > max_len)
        return fail(r, "field '%s' is %zu bytes long, the limit is %zu", name, n, max_len);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return fail(r, "field '%s' contains a control character", name);
    if (nonempty && n == 0)
        return fail(r, "field '%s' is empty", name);
    *out = s;
    return 1;
}

int jf_value(const jf_t *r, const char *key, bool required, json_object **out)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, key, field_name(r, key, name), required, &v);
    if (rc == 1)
        *out = v;
    return rc;
}

int jf_object(const jf_t *r, const char *key, bool required, json_object **out)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, key, field_name(r, key, name), required, &v);
    if (rc == 1 && (rc = want(r, v, json_type_object, "an object", name)) == 1)
        *out = v;
    return rc;
}

int jf_int(const jf_t *r, const char *key, bool required, int64_t min, int64_t max, int64_t *out)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, key, field_name(r, key, name), required, &v);
    return rc == 1 ? check_int(r, v, name, min, max, out) : rc;
}

int jf_string(const jf_t *r, const char *key, bool required, size_t max_len, const char **out)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, key, field_name(r, key, name), required, &v);
    return rc == 1 ? check_string(r, v, name, required, max_len, out) : rc;
}

int jf_string_copy(const jf_t *r, const char *key, bool required, char *dst, size_t cap)
{
    const char *s;
    dst[0] = '\0';
    int rc = jf_string(r, key, required, cap - 1, &s);
    if (rc == 1)
        memcpy(dst, s, strlen(s) + 1);
    return rc;
}

int jf_array(const jf_t *r, const char *key, bool required, size_t max_items, json_object **out)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, key, field_name(r, key, name), required, &v);
    if (rc != 1 || (rc = want(r, v, json_type_array, "an array", name)) != 1)
        return rc;
    size_t n = json_object_array_length(v);
    if (n > max_items)
        return fail(r, "field '%s' has %zu elements, the limit is %zu", name, n, max_items);
    *out = v;
    return 1;
}

int jf_string_at(const jf_t *r, const char *key, size_t i, size_t max_len, const char **out)
{
    char base[NAME_MAX_LEN], name[NAME_MAX_LEN + 24]; /* + "[index]" */
    json_object *a = NULL, *v = NULL;
    snprintf(name, sizeof name, "%s[%zu]", field_name(r, key, base), i);
    if (json_object_object_get_ex(r->obj, key, &a) && json_object_is_type(a, json_type_array))
        v = json_object_array_get_idx(a, i);
    if (json_object_is_type(v, json_type_null))
        return fail(r, "field '%s' is missing", name);
    return check_string(r, v, name, true, max_len, out);
}

int jf_text(const jf_t *r, const char *key, bool required, const char **out, size_t *len)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, key, field_name(r, key, name), required, &v);
    if (rc != 1 || (rc = want(r, v, json_type_string, "a string", name)) != 1)
        return rc;
    *out = json_object_get_string(v);
    *len = (size_t)json_object_get_string_len(v);
    return 1;
}

int jf_execution_id(const jf_t *r, bool required, int64_t *out)
{
    char name[NAME_MAX_LEN];
    json_object *v;
    int rc = lookup(r, "execution_id", field_name(r, "execution_id", name), required, &v);
    if (rc != 1)
        return rc;
    if (!json_object_is_type(v, json_type_string))
        return check_int(r, v, name, 1, INT64_MAX - 1, out);
    const char *s = json_object_get_string(v);
    if (ids_execution_id_parse(s, (size_t)json_object_get_string_len(v), out) != 0)
        return fail(r, "field '%s': '%.*s' is not a positive integer", name, utf8_prec(s, 40), s);
    return 1;
}

bool jf_has_nul(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_string:
        return strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v);
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (jf_has_nul(json_object_array_get_idx(v, i)))
                return true;
        return false;
    case json_type_object: {
        json_object_object_foreach(v, key, val) {
            (void)key;
            if (jf_has_nul(val))
                return true;
        }
        return false;
    }
    default: return false;
    }
}
