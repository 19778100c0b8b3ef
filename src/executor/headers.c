/* AMQP header tables as JSON, and the x-death record of a dead-lettered message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/headers.h"
#include "warren/timestamp.h"
#include "warren/utf8.h"

/* Deeper nesting than this is not something RabbitMQ or warren produce: cut it off. */
#define MAX_DEPTH 16

static json_object *value_to_json(const amqp_field_value_t *v, int depth);

static json_object *bytes_to_json(amqp_bytes_t b)
{
    char *clean = utf8_clean(b.bytes, b.len);
    json_object *o = clean ? json_object_new_string(clean) : NULL;
    free(clean);
    return o;
}

static json_object *double_to_json(double d)
{
    return isfinite(d) ? json_object_new_double(d) : NULL;
}

static json_object *table_to_json(const amqp_table_t *t, int depth)
{
    json_object *o = json_object_new_object();
    for (int i = 0; o && t && i < t->num_entries; i++) {
        char *key = utf8_clean(t->entries[i].key.bytes, t->entries[i].key.len);
        if (key)
            json_object_object_add(o, key, value_to_json(&t->entries[i].value, depth + 1));
        free(key);
    }
    return o;
}

static json_object *array_to_json(const amqp_array_t *a, int depth)
{
    json_object *o = json_object_new_array();
    for (int i = 0; o && i < a->num_entries; i++)
        json_object_array_add(o, value_to_json(&a->entries[i], depth + 1));
    return o;
}

/* An AMQP timestamp (seconds since the epoch, any 64-bit value a publisher chose) as RFC 3339,
 * or the number itself when it lies beyond year 9999: kept, never turned into a wrong time. */
static json_object *timestamp_to_json(uint64_t s)
{
    char ts[TS_TEXT_MAX];
    if (s > (uint64_t)TS_MAX_S)
        return json_object_new_uint64(s);
    ts_format((int64_t)s * 1000000, ts, sizeof ts);
    return json_object_new_string(ts);
}

static json_object *value_to_json(const amqp_field_value_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return json_object_new_string("(nested too deep)");
    switch (v->kind) {
    case AMQP_FIELD_KIND_BOOLEAN: return json_object_new_boolean(v->value.boolean != 0);
    case AMQP_FIELD_KIND_I8: return json_object_new_int64(v->value.i8);
    case AMQP_FIELD_KIND_U8: return json_object_new_int64(v->value.u8);
    case AMQP_FIELD_KIND_I16: return json_object_new_int64(v->value.i16);
    case AMQP_FIELD_KIND_U16: return json_object_new_int64(v->value.u16);
    case AMQP_FIELD_KIND_I32: return json_object_new_int64(v->value.i32);
    case AMQP_FIELD_KIND_U32: return json_object_new_int64(v->value.u32);
    case AMQP_FIELD_KIND_I64: return json_object_new_int64(v->value.i64);
    case AMQP_FIELD_KIND_U64: return json_object_new_uint64(v->value.u64);
    case AMQP_FIELD_KIND_F32: return double_to_json(v->value.f32);
    case AMQP_FIELD_KIND_F64: return double_to_json(v->value.f64);
    case AMQP_FIELD_KIND_DECIMAL:
        return double_to_json(v->value.decimal.value / pow(10, v->value.decimal.decimals));
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES: return bytes_to_json(v->value.bytes);
    case AMQP_FIELD_KIND_TIMESTAMP: return timestamp_to_json(v->value.u64);
    case AMQP_FIELD_KIND_TABLE: return table_to_json(&v->value.table, depth);
    case AMQP_FIELD_KIND_ARRAY: return array_to_json(&v->value.array, depth);
    case AMQP_FIELD_KIND_VOID: return NULL;
    }
    return NULL;
}

json_object *hdr_to_json(const amqp_table_t *table)
{
    return table_to_json(table, 0);
}

static const amqp_field_value_t *find(const amqp_table_t *t, const char *key)
{
    size_t klen = strlen(key);
    for (int i = 0; t && i < t->num_entries; i++)
        if (t->entries[i].key.len == klen && !memcmp(t->entries[i].key.bytes, key, klen))
            return &t->entries[i].value;
    return NULL;
}

json_object *hdr_x_death_json(const amqp_table_t *table)
{
    const amqp_field_value_t *v = find(table, "x-death");
    return v && v->kind == AMQP_FIELD_KIND_ARRAY ? array_to_json(&v->value.array, 0) : NULL;
}

static void copy_string(const amqp_field_value_t *v, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (!v || (v->kind != AMQP_FIELD_KIND_UTF8 && v->kind != AMQP_FIELD_KIND_BYTES))
        return;
    char *clean = utf8_clean(v->value.bytes.bytes, v->value.bytes.len);
    if (clean)
        snprintf(dst, cap, "%.*s", utf8_prec(clean, cap - 1), clean);
    free(clean);
}

static int64_t integer_of(const amqp_field_value_t *v)
{
    if (!v)
        return 0;
    switch (v->kind) {
    case AMQP_FIELD_KIND_I8: return v->value.i8;
    case AMQP_FIELD_KIND_U8: return v->value.u8;
    case AMQP_FIELD_KIND_I16: return v->value.i16;
    case AMQP_FIELD_KIND_U16: return v->value.u16;
    case AMQP_FIELD_KIND_I32: return v->value.i32;
    case AMQP_FIELD_KIND_U32: return v->value.u32;
    case AMQP_FIELD_KIND_I64: return v->value.i64;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP: return (int64_t)v->value.u64;
    default: return 0;
    }
}

/* The x-death's time in seconds. One no formatter can write is no time: absent, 0 (the headers
 * keep the value itself). */
static int64_t time_of(const amqp_field_value_t *v)
{
    if (v && (v->kind == AMQP_FIELD_KIND_TIMESTAMP || v->kind == AMQP_FIELD_KIND_U64))
        return v->value.u64 <= (uint64_t)TS_MAX_S ? (int64_t)v->value.u64 : 0;
    int64_t s = integer_of(v);
    return s >= TS_MIN_S && s <= TS_MAX_S ? s : 0;
}

void hdr_death_at(const amqp_table_t *table, int index, xdeath_t *out)
{
    memset(out, 0, sizeof *out);
    const amqp_field_value_t *v = find(table, "x-death");
    if (!v || v->kind != AMQP_FIELD_KIND_ARRAY || index < 0 || v->value.array.num_entries <= index)
        return;
    const amqp_field_value_t *entry = &v->value.array.entries[index];
    if (entry->kind != AMQP_FIELD_KIND_TABLE)
        return;
    const amqp_table_t *t = &entry->value.table;
    out->present = true;
    copy_string(find(t, "queue"), out->queue, sizeof out->queue);
    copy_string(find(t, "reason"), out->reason, sizeof out->reason);
    copy_string(find(t, "exchange"), out->exchange, sizeof out->exchange);
    out->count = integer_of(find(t, "count"));
    out->time_s = time_of(find(t, "time"));
    const amqp_field_value_t *keys = find(t, "routing-keys");
    if (keys && keys->kind == AMQP_FIELD_KIND_ARRAY && keys->value.array.num_entries > 0)
        copy_string(&keys->value.array.entries[0], out->routing_key, sizeof out->routing_key);
}

void hdr_first_death(const amqp_table_t *table, xdeath_t *out)
{
    hdr_death_at(table, 0, out);
}
