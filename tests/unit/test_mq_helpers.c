/* MessageClient parts that need no broker: options mapping, defaults, reply and header helpers,
 * and the breaker wiring (a refused loopback connect is the only I/O). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <amqp.h>
#include <amqp_framing.h>
#include <stdlib.h>
#include <string.h>
#include "mq/mq_internal.h"
#include "warren/mq.h"

static void test_options_from_config(void **state)
{
    (void)state;
    warren_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rabbitmq.url = "amqp://u:p@h:1/v";
    cfg.rabbitmq.heartbeat_s = 11;
    cfg.rabbitmq.connect_timeout_ms = 1234;
    cfg.rabbitmq.publish_timeout_ms = 4321;
    cfg.rabbitmq.prefetch = 7;
    cfg.circuit_breaker.messaging.failure_threshold = 9;
    cfg.circuit_breaker.messaging.success_threshold = 3;
    cfg.circuit_breaker.messaging.open_timeout_s = 42;
    cfg.message_queue.max_body_bytes = 65536;
    mq_options_t o;
    mq_options_from_config(&o, &cfg, "warren-worker");
    assert_string_equal(o.url, "amqp://u:p@h:1/v");
    assert_int_equal(o.heartbeat_s, 11);
    assert_int_equal(o.connect_timeout_ms, 1234);
    assert_int_equal(o.publish_timeout_ms, 4321);
    assert_int_equal(o.prefetch, 7);
    assert_int_equal(o.breaker_failure_threshold, 9);
    assert_int_equal(o.breaker_success_threshold, 3);
    assert_int_equal(o.breaker_open_timeout_s, 42);
    assert_int_equal(o.max_body_bytes, 65536);
    assert_string_equal(o.app_id, "warren-worker");
}

static void test_new_applies_defaults(void **state)
{
    (void)state;
    mq_options_t o = {.url = "amqp://guest:guest@127.0.0.1:1/"};
    mq_client_t *c = mq_new(&o);
    assert_non_null(c);
    const breaker_t *b = mq_breaker(c);
    assert_int_equal(b->failure_threshold, 5);
    assert_int_equal(b->success_threshold, 2);
    assert_int_equal(b->open_timeout_ms, 30000);
    assert_string_equal(b->name, "messaging");
    assert_false(mq_connected(c));
    assert_int_equal(mq_fd(c), -1);
    assert_null(mq_conn(c));
    assert_string_equal(mq_last_error(c), "");
    assert_int_equal(mq_retry_in_ms(c), 0);
    assert_int_equal(c->opts.max_body_bytes, MQ_DEFAULT_MAX_BODY_BYTES);
    mq_destroy(c);
}

static void test_oversized_text(void **state)
{
    (void)state;
    mq_delivery_t d = {
        .body_len = 4096, .body_size = 52428800, .oversized = true, .body_limit = 1048576};
    char text[200];
    mq_oversized_text(&d, text, sizeof text);
    assert_string_equal(text, "body of 52428800 bytes exceeds message_queue.max_body_bytes "
                              "(1048576); only its first 4096 bytes were kept");
}

static void test_no_consumer_no_io(void **state)
{
    (void)state;
    mq_options_t o = {.url = "amqp://guest:guest@127.0.0.1:1/"};
    mq_client_t *c = mq_new(&o);
    mq_delivery_t *d = (mq_delivery_t *)1;
    assert_int_equal(mq_consume_next(c, 1000, &d), MQ_ERR_CONNECTION);
    assert_null(d);
    assert_int_equal(mq_ack(c, 1, false), MQ_ERR_CONNECTION);
    assert_int_equal(mq_nack(c, 1, true), MQ_ERR_CONNECTION);
    assert_int_equal(mq_pump(c), MQ_ERR_CONNECTION);
    mq_destroy(c);
}

/* Nothing listens on 127.0.0.1:1: connects are refused at once. */
static void test_breaker_opens_and_fails_fast(void **state)
{
    (void)state;
    mq_options_t o = {.url = "amqp://guest:guest@127.0.0.1:1/",
                      .breaker_failure_threshold = 2,
                      .breaker_open_timeout_s = 60,
                      .connect_timeout_ms = 500};
    mq_client_t *c = mq_new(&o);
    mq_message_t m = {.exchange = "", .routing_key = "q", .body = "{}", .body_len = 2};
    assert_int_equal(mq_publish(c, &m), MQ_ERR_CONNECTION); /* refused */
    assert_int_equal(mq_publish(c, &m), MQ_ERR_CONNECTION); /* reconnect backoff: no attempt */
    assert_non_null(strstr(mq_last_error(c), "reconnect backoff"));
    assert_int_equal(mq_breaker(c)->state, BREAKER_OPEN);
    int64_t retry = mq_retry_in_ms(c);
    assert_true(retry > 50000 && retry <= 60000);
    int results[3];
    mq_message_t batch[3] = {m, m, m};
    assert_int_equal(mq_publish_batch(c, batch, 3, results), MQ_ERR_BREAKER_OPEN);
    for (int i = 0; i < 3; i++)
        assert_int_equal(results[i], MQ_ERR_BREAKER_OPEN);
    char err[ERRBUF_SIZE];
    assert_int_equal(mq_consume(c, "q", err, sizeof err), MQ_ERR_BREAKER_OPEN);
    assert_non_null(strstr(err, "circuit breaker open"));
    assert_int_equal(mq_breaker(c)->calls_rejected, 2);
    assert_int_equal(mq_breaker(c)->failures, 2);
    /* an explicit connect is not gated, and says why it failed */
    assert_int_equal(mq_connect(c, err, sizeof err), -1);
    assert_non_null(strstr(err, "127.0.0.1:1"));
    mq_destroy(c);
}

static void test_describe_reply(void **state)
{
    (void)state;
    char buf[256];
    amqp_rpc_reply_t r = {.reply_type = AMQP_RESPONSE_NORMAL};
    mq_describe_reply(r, buf, sizeof buf);
    assert_string_equal(buf, "ok");

    r = (amqp_rpc_reply_t){.reply_type = AMQP_RESPONSE_LIBRARY_EXCEPTION,
                           .library_error = AMQP_STATUS_TIMEOUT};
    mq_describe_reply(r, buf, sizeof buf);
    assert_string_equal(buf, amqp_error_string2(AMQP_STATUS_TIMEOUT));

    amqp_channel_close_t cc = {.reply_code = 404,
                               .reply_text = amqp_cstring_bytes("NOT_FOUND - no exchange 'x'")};
    r = (amqp_rpc_reply_t){.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION,
                           .reply = {.id = AMQP_CHANNEL_CLOSE_METHOD, .decoded = &cc}};
    mq_describe_reply(r, buf, sizeof buf);
    assert_string_equal(buf, "404 NOT_FOUND - no exchange 'x'");

    amqp_connection_close_t kc = {.reply_code = 320,
                                  .reply_text = amqp_cstring_bytes("CONNECTION_FORCED")};
    r.reply = (amqp_method_t){.id = AMQP_CONNECTION_CLOSE_METHOD, .decoded = &kc};
    mq_describe_reply(r, buf, sizeof buf);
    assert_string_equal(buf, "connection closed by broker: 320 CONNECTION_FORCED");
}

static void test_header_string(void **state)
{
    (void)state;
    amqp_table_entry_t e[3];
    e[0].key = amqp_cstring_bytes("execution_id");
    e[0].value.kind = AMQP_FIELD_KIND_UTF8;
    e[0].value.value.bytes = amqp_cstring_bytes("123");
    e[1].key = amqp_cstring_bytes("count");
    e[1].value.kind = AMQP_FIELD_KIND_I64;
    e[1].value.value.i64 = 5;
    e[2].key = amqp_cstring_bytes("raw");
    e[2].value.kind = AMQP_FIELD_KIND_BYTES;
    e[2].value.value.bytes = amqp_cstring_bytes("abc");
    amqp_table_t t = {.num_entries = 3, .entries = e};
    char *s = mq_header_string(&t, "execution_id");
    assert_string_equal(s, "123");
    free(s);
    s = mq_header_string(&t, "raw");
    assert_string_equal(s, "abc");
    free(s);
    assert_null(mq_header_string(&t, "count"));     /* not a string */
    assert_null(mq_header_string(&t, "execution")); /* prefix is not a match */
    assert_null(mq_header_string(&t, "missing"));
    amqp_table_t empty = {0};
    assert_null(mq_header_string(&empty, "execution_id"));
}

/* mq_try_connect tries when the reconnect backoff allows and not before, breaker or not. */
static void test_try_connect_follows_the_backoff(void **state)
{
    (void)state;
    mq_options_t o = {.url = "amqp://guest:guest@127.0.0.1:1/", .connect_timeout_ms = 500};
    mq_client_t *c = mq_new(&o);
    assert_int_equal(mq_try_connect(c), MQ_ERR_CONNECTION); /* refused */
    assert_null(strstr(mq_last_error(c), "reconnect backoff"));
    assert_int_equal(mq_try_connect(c), MQ_ERR_CONNECTION); /* backoff: no attempt */
    assert_non_null(strstr(mq_last_error(c), "reconnect backoff"));
    assert_int_equal(mq_breaker(c)->failures, 0); /* not the breaker's business */
    mq_destroy(c);
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(mq_status_name(MQ_OK), "ok");
    assert_string_equal(mq_status_name(MQ_ERR_BREAKER_OPEN), "breaker_open");
    assert_string_equal(mq_status_name(MQ_ERR_RETURNED), "returned");
    assert_string_equal(mq_status_name(MQ_ERR_CANCELLED), "cancelled");
    assert_string_equal(mq_status_name(MQ_ERR_UNCONFIRMED), "unconfirmed");
    /* Maybe in the queue: confirmed, or written without an answer. Not: refused, never written. */
    assert_true(mq_status_maybe_delivered(MQ_OK));
    assert_true(mq_status_maybe_delivered(MQ_ERR_TIMEOUT));
    assert_true(mq_status_maybe_delivered(MQ_ERR_UNCONFIRMED));
    assert_false(mq_status_maybe_delivered(MQ_ERR_NACKED));
    assert_false(mq_status_maybe_delivered(MQ_ERR_RETURNED));
    assert_false(mq_status_maybe_delivered(MQ_ERR_CLOSED_BY_BROKER));
    assert_false(mq_status_maybe_delivered(MQ_ERR_CONNECTION));
    assert_false(mq_status_maybe_delivered(MQ_ERR_BREAKER_OPEN));
    assert_string_equal(mq_status_name(-99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_from_config),
        cmocka_unit_test(test_new_applies_defaults),
        cmocka_unit_test(test_oversized_text),
        cmocka_unit_test(test_no_consumer_no_io),
        cmocka_unit_test(test_breaker_opens_and_fails_fast),
        cmocka_unit_test(test_describe_reply),
        cmocka_unit_test(test_header_string),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_try_connect_follows_the_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
