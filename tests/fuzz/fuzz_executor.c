/*
 * Every message the executor consumes, as its consumers parse it before touching the database
 * (executor/results.h, registry.h, dlq_handler.h): worker reports (results_handler), heartbeats
 * (registry_handler) and dead letters (dlq_handler). Workers and anyone allowed to publish to
 * the dead-letter exchange write these.
 * Input: one byte choosing the handler (bits 0-1: results, heartbeats, dead letters) and whether
 * headers follow (bit 2: then a 16-bit big-endian length and that many bytes of an encoded
 * AMQP headers table); the rest is the body.
 * Invariants: a message is either usable or marked with a dead-letter reason and an error that
 * is valid UTF-8 text (it is stored in dead_letters.error, a text column).
 */
#include "executor/dlq_handler.h"
#include "executor/inmsg.h"
#include "executor/registry.h"
#include "executor/results.h"
#include "fuzz.h"
#include "warren/log.h"
#include "warren/utf8.h"

static const consumer_handler_t *const handlers[] = {&results_handler, &registry_handler,
                                                     &dlq_handler, &dlq_handler};
static const char *const queues[] = {"attune.execution.results", "attune.worker.heartbeats",
                                     "attune.dlx.queue", "attune.dlx.queue"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_setup(LOG_ERROR, LOG_FORMAT_JSON);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    data++, size--;
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_table_t headers = amqp_empty_table;
    uint8_t *props = NULL;
    if (opt & 4) {
        if (size < 2)
            goto out;
        size_t len = (size_t)data[0] << 8 | data[1];
        if (len > size - 2)
            goto out;
        (void)fuzz_headers_table(data + 2, len, &pool, &props, &headers); /* else: none */
        data += 2 + len, size -= 2 + len;
    }
    /* The body in a buffer of its own size, so a read past it is caught. */
    void *body = malloc(size ? size : 1);
    FUZZ_CHECK(body != NULL);
    if (size)
        memcpy(body, data, size);
    mq_delivery_t d = {.delivery_tag = 1,
                       .exchange = "attune.executions",
                       .routing_key = "execution.completed.w1",
                       .consumer_tag = "ctag",
                       .message_id = "m-1",
                       .correlation_id = "42",
                       .type = "ExecutionCompleted",
                       .content_type = "application/json",
                       .body = body,
                       .body_len = size,
                       .headers = headers};
    const consumer_handler_t *h = handlers[opt & 3];
    void *item = calloc(1, h->item_size);
    FUZZ_CHECK(item != NULL);
    h->parse(item, &d, queues[opt & 3]);
    const inmsg_t *m = item; /* the first member of every one of these items */
    if (m->reason[0]) {
        FUZZ_CHECK(memchr(m->reason, '\0', sizeof m->reason) != NULL);
        fuzz_check_err(m->error, sizeof m->error);
        if (!utf8_is_text(m->error, strlen(m->error))) {
            fprintf(stderr, "error text is not valid UTF-8: %s\n", m->error);
            abort();
        }
    }
    if (h->free_item)
        h->free_item(item);
    free(item);
    free(body);
out:
    empty_amqp_pool(&pool);
    free(props);
    return 0;
}
