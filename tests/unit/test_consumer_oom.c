/*
 * The executor's consumer when memory runs out holding a delivery: the delivery goes back to
 * the broker (nack, requeue), so the batch's ack (multiple, up to its last tag) cannot ack it
 * unstored. The broker client, the database and realloc are stood in for (// wrap below).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "executor/consumer.h"
#include "warren/fiber.h"

// wrap: mq_new mq_destroy mq_consume mq_consume_next mq_free_delivery mq_ack mq_nack
// wrap: mq_connected mq_fd dbc_transaction realloc

#define N_DELIVERIES 70
#define FAILING_TAG 65 /* the batch's array grows from 64 entries to hold it */

static struct {
    uint64_t next_tag;
    bool fail_realloc; /* the next realloc fails */
    int fd;
    uint64_t acked_upto, nacked_tag;
    bool nack_requeue;
    size_t stored;
} fake;

/* The stand-ins: declared here, as the linker knows them. */
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
mq_client_t *__wrap_mq_new(const mq_options_t *o);
void __wrap_mq_destroy(mq_client_t *c);
int __wrap_mq_consume(mq_client_t *c, const char *queue, char *err, size_t errlen);
bool __wrap_mq_connected(const mq_client_t *c);
int __wrap_mq_fd(const mq_client_t *c);
int __wrap_mq_consume_next(mq_client_t *c, int timeout_ms, mq_delivery_t **out);
void __wrap_mq_free_delivery(mq_client_t *c, mq_delivery_t *d);
int __wrap_mq_ack(mq_client_t *c, uint64_t tag, bool multiple);
int __wrap_mq_nack(mq_client_t *c, uint64_t tag, bool requeue);
dbc_result_t __wrap_dbc_transaction(dbconn_t *d, const char *what, dbc_work_fn work, void *arg);

void *__wrap_realloc(void *p, size_t n)
{
    if (fake.fail_realloc) {
        fake.fail_realloc = false;
        return NULL;
    }
    return __real_realloc(p, n);
}

mq_client_t *__wrap_mq_new(const mq_options_t *o)
{
    (void)o;
    return (mq_client_t *)&fake;
}

void __wrap_mq_destroy(mq_client_t *c)
{
    (void)c;
}

int __wrap_mq_consume(mq_client_t *c, const char *queue, char *err, size_t errlen)
{
    (void)c, (void)queue, (void)err, (void)errlen;
    return MQ_OK;
}

bool __wrap_mq_connected(const mq_client_t *c)
{
    (void)c;
    return true;
}

int __wrap_mq_fd(const mq_client_t *c)
{
    (void)c;
    return fake.fd;
}

int __wrap_mq_consume_next(mq_client_t *c, int timeout_ms, mq_delivery_t **out)
{
    (void)c, (void)timeout_ms;
    if (fake.next_tag > N_DELIVERIES)
        return 0;
    mq_delivery_t *d = calloc(1, sizeof *d);
    d->delivery_tag = fake.next_tag++;
    fake.fail_realloc = d->delivery_tag == FAILING_TAG;
    *out = d;
    return 1;
}

void __wrap_mq_free_delivery(mq_client_t *c, mq_delivery_t *d)
{
    (void)c;
    free(d);
}

int __wrap_mq_ack(mq_client_t *c, uint64_t tag, bool multiple)
{
    (void)c;
    assert_true(multiple);
    fake.acked_upto = tag;
    return MQ_OK;
}

int __wrap_mq_nack(mq_client_t *c, uint64_t tag, bool requeue)
{
    (void)c;
    fake.nacked_tag = tag;
    fake.nack_requeue = requeue;
    return MQ_OK;
}

dbc_result_t __wrap_dbc_transaction(dbconn_t *d, const char *what, dbc_work_fn work, void *arg)
{
    (void)d, (void)what;
    char err[64];
    return work(NULL, arg, err, sizeof err) == 0 ? DBC_OK : DBC_FAILED;
}

static void parse(void *item, const mq_delivery_t *d, const char *queue)
{
    (void)queue;
    *(uint64_t *)item = d->delivery_tag;
}

static int work(PGconn *db, consumer_batch_t *b, char *err, size_t errlen)
{
    (void)db, (void)err, (void)errlen;
    for (size_t i = 0; i < b->n; i++)
        assert_true(((uint64_t *)b->items)[i] != FAILING_TAG);
    fake.stored += b->n;
    return 0;
}

static void test_oom_delivery_is_requeued(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    fake.next_tag = 1;
    fake.fd = p[0];
    struct event_base *base = event_base_new();
    const consumer_handler_t h = {
        .what = "storing", .item_size = sizeof(uint64_t), .parse = parse, .work = work};
    executor_stats_t stats;
    memset(&stats, 0, sizeof stats);
    mq_options_t mo;
    memset(&mo, 0, sizeof mo);
    consumer_opts_t o = {.name = "test",
                         .queue = "q",
                         .mq = &mo,
                         .base = base,
                         .retry_delay_ms = 10,
                         .handler = &h,
                         .fallback = &h,
                         .stats = &stats};
    consumer_t c;
    assert_int_equal(consumer_init(&c, &o), 0);
    char err[128];
    assert_int_equal(consumer_start(&c, err, sizeof err), 0);
    while (fiber_count() > 0) /* the batch is handled on the consumer's fiber */
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(fake.stored, N_DELIVERIES - 1);
    assert_true(fake.acked_upto == N_DELIVERIES);
    assert_true(fake.nacked_tag == FAILING_TAG); /* before the ack that covers it */
    assert_true(fake.nack_requeue);
    consumer_free(&c);
    fiber_cleanup();
    event_base_free(base);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_delivery_is_requeued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
