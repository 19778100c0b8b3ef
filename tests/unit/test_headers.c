/* AMQP headers as JSON and the x-death record, as RabbitMQ writes them for a dead letter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "executor/headers.h"

/* U+FFFD, the replacement character, in UTF-8. */
#define FFFD "\xef\xbf\xbd"

static amqp_table_entry_t utf8(const char *key, const char *v)
{
    amqp_table_entry_t e = {.key = amqp_cstring_bytes(key)};
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = amqp_cstring_bytes(v);
    return e;
}

static amqp_table_entry_t i64(const char *key, int64_t v)
{
    amqp_table_entry_t e = {.key = amqp_cstring_bytes(key)};
    e.value.kind = AMQP_FIELD_KIND_I64;
    e.value.value.i64 = v;
    return e;
}

/* The x-death entry of a dispatch that expired in worker.w1.executions at 2024-05-01T12:00:00Z. */
static amqp_field_value_t keys_value[1];
static amqp_table_entry_t death_entries[6];
static amqp_field_value_t deaths[1];
static amqp_table_entry_t headers[3];

static amqp_table_t dead_letter_headers(void)
{
    keys_value[0].kind = AMQP_FIELD_KIND_UTF8;
    keys_value[0].value.bytes = amqp_cstring_bytes("execution.dispatch.worker.w1");
    death_entries[0] = i64("count", 2);
    death_entries[1] = utf8("reason", "expired");
    death_entries[2] = utf8("queue", "worker.w1.executions");
    death_entries[3] = (amqp_table_entry_t){.key = amqp_cstring_bytes("time")};
    death_entries[3].value.kind = AMQP_FIELD_KIND_TIMESTAMP;
    death_entries[3].value.value.u64 = 1714564800;
    death_entries[4] = utf8("exchange", "attune.executions");
    death_entries[5] = (amqp_table_entry_t){.key = amqp_cstring_bytes("routing-keys")};
    death_entries[5].value.kind = AMQP_FIELD_KIND_ARRAY;
    death_entries[5].value.value.array = (amqp_array_t){.num_entries = 1, .entries = keys_value};
    deaths[0].kind = AMQP_FIELD_KIND_TABLE;
    deaths[0].value.table = (amqp_table_t){.num_entries = 6, .entries = death_entries};
    headers[0] = (amqp_table_entry_t){.key = amqp_cstring_bytes("x-death")};
    headers[0].value.kind = AMQP_FIELD_KIND_ARRAY;
    headers[0].value.value.array = (amqp_array_t){.num_entries = 1, .entries = deaths};
    headers[1] = utf8("execution_id", "42");
    headers[2] = utf8("x-first-death-reason", "expired");
    return (amqp_table_t){.num_entries = 3, .entries = headers};
}

static void x_death_is_read(void **state)
{
    (void)state;
    amqp_table_t t = dead_letter_headers();
    xdeath_t xd;
    hdr_first_death(&t, &xd);
    assert_true(xd.present);
    assert_string_equal(xd.reason, "expired");
    assert_string_equal(xd.queue, "worker.w1.executions");
    assert_string_equal(xd.exchange, "attune.executions");
    assert_string_equal(xd.routing_key, "execution.dispatch.worker.w1");
    assert_int_equal(xd.count, 2);
    assert_int_equal(xd.time_s, 1714564800);
}

static void headers_become_json(void **state)
{
    (void)state;
    amqp_table_t t = dead_letter_headers();
    json_object *j = hdr_to_json(&t);
    assert_string_equal(
        json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
        "{\"x-death\":[{\"count\":2,\"reason\":\"expired\",\"queue\":\"worker.w1.executions\","
        "\"time\":\"2024-05-01T12:00:00.000Z\",\"exchange\":\"attune.executions\","
        "\"routing-keys\":[\"execution.dispatch.worker.w1\"]}],"
        "\"execution_id\":\"42\",\"x-first-death-reason\":\"expired\"}");
    json_object_put(j);
    json_object *xd = hdr_x_death_json(&t);
    assert_int_equal(json_object_array_length(xd), 1);
    json_object_put(xd);
}

static void odd_values_stay_storable(void **state)
{
    (void)state;
    static char bin[] = {'a', '\0', (char)0xff, 'b'};
    amqp_table_entry_t e[5];
    e[0] = (amqp_table_entry_t){.key = amqp_cstring_bytes("bin")};
    e[0].value.kind = AMQP_FIELD_KIND_BYTES;
    e[0].value.value.bytes = (amqp_bytes_t){.len = sizeof bin, .bytes = bin};
    e[1] = (amqp_table_entry_t){.key = amqp_cstring_bytes("nan")};
    e[1].value.kind = AMQP_FIELD_KIND_F64;
    e[1].value.value.f64 = __builtin_nan("");
    e[2] = (amqp_table_entry_t){.key = amqp_cstring_bytes("void")};
    e[2].value.kind = AMQP_FIELD_KIND_VOID;
    e[3] = (amqp_table_entry_t){.key = amqp_cstring_bytes("flag")};
    e[3].value.kind = AMQP_FIELD_KIND_BOOLEAN;
    e[3].value.value.boolean = 1;
    e[4] = (amqp_table_entry_t){.key = amqp_cstring_bytes("dec")};
    e[4].value.kind = AMQP_FIELD_KIND_DECIMAL;
    e[4].value.value.decimal = (amqp_decimal_t){.decimals = 2, .value = 1234};
    amqp_table_t t = {.num_entries = 5, .entries = e};
    json_object *j = hdr_to_json(&t);
    assert_string_equal(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
                        "{\"bin\":\"a" FFFD FFFD "b\",\"nan\":null,\"void\":null,"
                        "\"flag\":true,\"dec\":12.34}");
    json_object_put(j);
    xdeath_t xd;
    hdr_first_death(&t, &xd);
    assert_false(xd.present);
    j = hdr_to_json(NULL);
    assert_string_equal(json_object_to_json_string(j), "{ }");
    json_object_put(j);
}

/* Decode a content header's properties, as rabbitmq-c does for a delivery, into *props. */
static void decode_properties(const void *bytes, size_t len, amqp_pool_t *pool,
                              amqp_basic_properties_t **props)
{
    void *decoded = NULL;
    init_amqp_pool(pool, 4096);
    assert_int_equal(amqp_decode_properties(AMQP_BASIC_CLASS, pool,
                                            (amqp_bytes_t){.len = len, .bytes = (void *)bytes},
                                            &decoded),
                     AMQP_STATUS_OK);
    *props = decoded;
}

/* Found by tests/fuzz/fuzz_headers.c: any publisher may set a timestamp header, and seconds past
 * year 9999 overflowed into microseconds (undefined behaviour, then a wrong time). */
static void huge_timestamps_stay_numbers(void **state)
{
    (void)state;
    static const unsigned char input[] = {
        0x20, 0x00,                                     /* property flags: headers only */
        0x00, 0x00, 0x00, 0x0e,                         /* table of 14 bytes */
        0x04, 't',  'i',  'm',  'e',  'T',              /* "time": timestamp */
        0xea, 0xff, 0xff, 0xff, 0x66, 0x32, 0x00, 0x02, /* 16933534596332650498 s */
    };
    amqp_pool_t pool;
    amqp_basic_properties_t *p;
    decode_properties(input, sizeof input, &pool, &p);
    json_object *j = hdr_to_json(&p->headers);
    assert_string_equal(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
                        "{\"time\":16933534596332650498}");
    json_object_put(j);
    empty_amqp_pool(&pool);

    amqp_table_entry_t e = {.key = amqp_cstring_bytes("last")};
    e.value.kind = AMQP_FIELD_KIND_TIMESTAMP;
    e.value.value.u64 = 253402300799; /* the last second ts_format writes */
    amqp_table_t t = {.num_entries = 1, .entries = &e};
    j = hdr_to_json(&t);
    assert_string_equal(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
                        "{\"last\":\"9999-12-31T23:59:59.000Z\"}");
    json_object_put(j);
}

/* The x-death's time feeds the failed execution's expired_at (microseconds): one no formatter
 * can write counts as absent, whatever its integer kind. */
static void x_death_time_out_of_range_is_absent(void **state)
{
    (void)state;
    amqp_table_t t = dead_letter_headers();
    xdeath_t xd;
    death_entries[3].value.value.u64 = UINT64_MAX;
    hdr_first_death(&t, &xd);
    assert_true(xd.present);
    assert_int_equal(xd.time_s, 0);
    assert_string_equal(xd.reason, "expired");
    death_entries[3] = i64("time", INT64_MIN);
    hdr_first_death(&t, &xd);
    assert_int_equal(xd.time_s, 0);
    death_entries[3] = i64("time", -62135596800); /* 0001-01-01T00:00:00Z */
    hdr_first_death(&t, &xd);
    assert_int_equal(xd.time_s, -62135596800);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(x_death_is_read),
        cmocka_unit_test(headers_become_json),
        cmocka_unit_test(odd_values_stay_storable),
        cmocka_unit_test(huge_timestamps_stay_numbers),
        cmocka_unit_test(x_death_time_out_of_range_is_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
