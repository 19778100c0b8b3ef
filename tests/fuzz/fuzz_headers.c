/*
 * AMQP headers as the executor gets them from the broker: a content header's property bytes,
 * decoded by rabbitmq-c, turned into JSON for dead_letters.headers and into the x-death record
 * (executor/headers.h). The input is the encoded headers table (a 32-bit length and its
 * entries); the target puts the basic-properties flag word for "headers only" in front of it.
 * Invariants: the JSON is valid UTF-8 that json-c reads back; the x-death texts are clean.
 */
#include "executor/headers.h"
#include "fuzz.h"
#include "warren/utf8.h"

static void check_json(json_object *j)
{
    size_t n = 0;
    const char *text = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &n);
    FUZZ_CHECK(text != NULL);
    FUZZ_CHECK(utf8_is_text(text, n));
    json_object *back = json_tokener_parse(text);
    FUZZ_CHECK(back != NULL || j == NULL);
    json_object_put(back);
}

static void check_text(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    FUZZ_CHECK(n < cap && utf8_is_text(s, n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amqp_pool_t pool;
    uint8_t *props;
    amqp_table_t t;
    init_amqp_pool(&pool, 4096);
    if (fuzz_headers_table(data, size, &pool, &props, &t)) {
        json_object *j = hdr_to_json(&t);
        FUZZ_CHECK(j != NULL);
        check_json(j);
        json_object_put(j);
        j = hdr_x_death_json(&t);
        if (j)
            check_json(j);
        json_object_put(j);
        xdeath_t xd;
        hdr_first_death(&t, &xd);
        check_text(xd.queue, sizeof xd.queue);
        check_text(xd.reason, sizeof xd.reason);
        check_text(xd.exchange, sizeof xd.exchange);
        check_text(xd.routing_key, sizeof xd.routing_key);
    }
    empty_amqp_pool(&pool);
    free(props);
    return 0;
}
