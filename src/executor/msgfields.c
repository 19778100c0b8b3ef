/* Payload fields of worker messages, checked strictly enough that the database never refuses them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/msgfields.h"
#include "warren/ids.h"

static json_object *get(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v))
        return NULL;
    return json_object_is_type(v, json_type_null) ? NULL : v;
}

int mf_int(json_object *obj, const char *key, int64_t min, int64_t max, int64_t *out, char *err,
           size_t errlen)
{
    json_object *v = get(obj, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_int)) {
        snprintf(err, errlen, "field '%s' must be an integer", key);
        return -1;
    }
    *out = json_object_get_int64(v);
    if (*out < min || *out > max) {
        snprintf(err, errlen, "field '%s' is %lld, expected %lld..%lld", key, (long long)*out,
                 (long long)min, (long long)max);
        return -1;
    }
    return 1;
}

int mf_string(json_object *obj, const char *key, size_t max_len, const char **out, char *err,
              size_t errlen)
{
    json_object *v = get(obj, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(err, errlen, "field '%s' must be a string", key);
        return -1;
    }
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (n > max_len) {
        snprintf(err, errlen, "field '%s' is longer than %zu bytes", key, max_len);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            snprintf(err, errlen, "field '%s' contains a control character", key);
            return -1;
        }
    *out = s;
    return 1;
}

int mf_execution_id(json_object *obj, int64_t *out, char *err, size_t errlen)
{
    json_object *v = get(obj, "execution_id");
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return mf_int(obj, "execution_id", 1, INT64_MAX - 1, out, err, errlen);
    if (ids_execution_id_parse(json_object_get_string(v), (size_t)json_object_get_string_len(v),
                               out) != 0) {
        snprintf(err, errlen, "field 'execution_id' is not a positive integer");
        return -1;
    }
    return 1;
}

bool mf_has_nul(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_string:
        return strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v);
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (mf_has_nul(json_object_array_get_idx(v, i)))
                return true;
        return false;
    case json_type_object: {
        json_object_object_foreach(v, key, val) {
            (void)key;
            if (mf_has_nul(val))
                return true;
        }
        return false;
    }
    default:
        return false;
    }
}
