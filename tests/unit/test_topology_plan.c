/* Unit tests for the topology plan, its comparison with management-API JSON, and 406 texts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mq/topology_plan.h"

static char ex_exec[] = "attune.executions", ex_dlx[] = "attune.dlx", q_dlq[] = "attune.dlx.queue",
            q_results[] = "attune.execution.results", q_hb[] = "attune.worker.heartbeats",
            q_parking[] = "attune.dlx.parking";

static warren_config_t test_config(int queue_type, bool dlx)
{
    warren_config_t c;
    memset(&c, 0, sizeof c);
    c.rabbitmq.worker_queue_ttl_ms = 300000;
    c.rabbitmq.queue_type = queue_type;
    c.rabbitmq.dead_letter.enabled = dlx;
    c.rabbitmq.dead_letter.exchange = ex_dlx;
    c.rabbitmq.dead_letter.queue = q_dlq;
    c.rabbitmq.dead_letter.ttl_ms = 86400000;
    c.rabbitmq.dead_letter.parking_queue = q_parking;
    c.rabbitmq.exchanges.executions = ex_exec;
    c.rabbitmq.queues.results = q_results;
    c.rabbitmq.queues.heartbeats = q_hb;
    return c;
}

/* Run a comparison into a memory stream; returns the drift count and the text (free it). */
#define CAPTURE(text, call)                                                                        \
    ({                                                                                             \
        size_t cap_len_;                                                                           \
        FILE *out = open_memstream(&(text), &cap_len_);                                            \
        int n_ = (call);                                                                           \
        fclose(out);                                                                               \
        n_;                                                                                        \
    })

static void test_common_plan(void **state)
{
    (void)state;
    warren_config_t cfg = test_config(QUEUE_CLASSIC, true);
    topo_plan_t p;
    topo_plan_common(&cfg, &p);
    assert_int_equal(p.n_exchanges, 2);
    assert_string_equal(p.exchanges[0].name, "attune.executions");
    assert_string_equal(p.exchanges[0].type, "topic");
    assert_string_equal(p.exchanges[1].name, "attune.dlx");
    assert_string_equal(p.exchanges[1].type, "fanout");

    assert_int_equal(p.n_queues, 4);
    const topo_queue_t *dlq = &p.queues[0];
    assert_string_equal(dlq->name, "attune.dlx.queue");
    assert_int_equal(dlq->n_args, 3);
    assert_int_equal(topo_queue_arg(dlq, "x-message-ttl")->i, 86400000);
    /* What outlives the retention goes to the parking queue through the default exchange. */
    assert_string_equal(topo_queue_arg(dlq, "x-dead-letter-exchange")->s, "");
    assert_string_equal(topo_queue_arg(dlq, "x-dead-letter-routing-key")->s, "attune.dlx.parking");
    const topo_queue_t *parking = &p.queues[1];
    assert_string_equal(parking->name, "attune.dlx.parking");
    assert_int_equal(parking->n_args, 0);    /* kept until recorded; no loops */
    assert_int_equal(p.queues[2].n_args, 0); /* results never expire */
    assert_int_equal(topo_queue_arg(&p.queues[3], "x-message-ttl")->i, TOPO_HEARTBEAT_TTL_MS);

    assert_int_equal(p.n_bindings, 4);
    assert_true(p.bindings[0].any_key);
    assert_string_equal(p.bindings[0].exchange, "attune.dlx");
    assert_string_equal(p.bindings[1].key, "execution.status.#");
    assert_string_equal(p.bindings[2].key, "execution.completed.#");
    assert_string_equal(p.bindings[3].key, "worker.heartbeat.#");
    assert_string_equal(p.bindings[3].queue, "attune.worker.heartbeats");
}

static void test_common_plan_without_dlx_and_quorum(void **state)
{
    (void)state;
    warren_config_t cfg = test_config(QUEUE_CLASSIC, false);
    topo_plan_t p;
    topo_plan_common(&cfg, &p);
    assert_int_equal(p.n_exchanges, 1);
    assert_int_equal(p.n_queues, 2);
    assert_int_equal(p.n_bindings, 3);

    cfg = test_config(QUEUE_QUORUM, true);
    topo_plan_common(&cfg, &p);
    for (size_t i = 0; i < p.n_queues; i++) {
        assert_true(p.queues[i].quorum);
        assert_string_equal(topo_queue_arg(&p.queues[i], "x-queue-type")->s, "quorum");
    }
    /* The dead-letter queue parks at-least-once too. */
    assert_int_equal(p.queues[0].n_args, 6);
    assert_string_equal(topo_queue_arg(&p.queues[0], "x-dead-letter-strategy")->s, "at-least-once");
    assert_string_equal(topo_queue_arg(&p.queues[0], "x-overflow")->s, "reject-publish");
}

static void test_worker_plan(void **state)
{
    (void)state;
    warren_config_t cfg = test_config(QUEUE_CLASSIC, true);
    topo_plan_t p;
    assert_int_equal(topo_plan_worker(&cfg, "w1", &p), 0);
    assert_int_equal(p.n_exchanges, 0);
    assert_int_equal(p.n_queues, 1);
    const topo_queue_t *q = &p.queues[0];
    assert_string_equal(q->name, "worker.w1.executions");
    assert_int_equal(q->n_args, 2);
    assert_int_equal(topo_queue_arg(q, "x-message-ttl")->i, 300000);
    assert_string_equal(topo_queue_arg(q, "x-dead-letter-exchange")->s, "attune.dlx");
    assert_int_equal(p.n_bindings, 1);
    assert_string_equal(p.bindings[0].key, "execution.dispatch.worker.w1");
    assert_string_equal(p.hint, "warren topology declare --worker w1");

    cfg = test_config(QUEUE_QUORUM, true);
    assert_int_equal(topo_plan_worker(&cfg, "w1", &p), 0);
    q = &p.queues[0];
    assert_int_equal(q->n_args, 5);
    assert_string_equal(topo_queue_arg(q, "x-queue-type")->s, "quorum");
    assert_string_equal(topo_queue_arg(q, "x-dead-letter-strategy")->s, "at-least-once");
    assert_string_equal(topo_queue_arg(q, "x-overflow")->s, "reject-publish");

    cfg = test_config(QUEUE_CLASSIC, false);
    assert_int_equal(topo_plan_worker(&cfg, "w1", &p), 0);
    assert_int_equal(p.queues[0].n_args, 1);
    assert_null(topo_queue_arg(&p.queues[0], "x-dead-letter-exchange"));

    assert_int_equal(topo_plan_worker(&cfg, "w#", &p), -1);
}

/* A worker process's control queue: its connection's own, never quorum, dead-lettering refusals. */
static void test_control_plan(void **state)
{
    (void)state;
    warren_config_t cfg = test_config(QUEUE_QUORUM, true);
    topo_plan_t p;
    assert_int_equal(topo_plan_control(&cfg, "w1", &p), 0);
    assert_int_equal(p.n_exchanges, 1);
    assert_string_equal(p.exchanges[0].name, "attune.executions");
    assert_string_equal(p.exchanges[0].type, "topic");
    assert_int_equal(p.n_queues, 1);
    const topo_queue_t *q = &p.queues[0];
    assert_string_equal(q->name, "worker.w1.control");
    assert_true(q->transient);
    assert_false(q->quorum);
    assert_int_equal(q->n_args, 1);
    assert_string_equal(topo_queue_arg(q, "x-dead-letter-exchange")->s, "attune.dlx");
    assert_int_equal(p.n_bindings, 1);
    assert_string_equal(p.bindings[0].queue, "worker.w1.control");
    assert_string_equal(p.bindings[0].key, "execution.cancel.worker.w1");

    cfg = test_config(QUEUE_CLASSIC, false);
    assert_int_equal(topo_plan_control(&cfg, "w1", &p), 0);
    assert_int_equal(p.queues[0].n_args, 0);
    assert_int_equal(topo_plan_control(&cfg, "w#", &p), -1);

    /* The worker queue's plan stays durable. */
    assert_int_equal(topo_plan_worker(&cfg, "w1", &p), 0);
    assert_false(p.queues[0].transient);
}

static void test_compare_queue(void **state)
{
    (void)state;
    warren_config_t cfg = test_config(QUEUE_CLASSIC, true);
    topo_plan_t p;
    assert_int_equal(topo_plan_worker(&cfg, "w1", &p), 0);
    char *text = NULL;

    json_object *same = json_tokener_parse(
        "{\"durable\":true,\"type\":\"classic\",\"arguments\":{\"x-message-ttl\":300000,"
        "\"x-dead-letter-exchange\":\"attune.dlx\"}}");
    assert_int_equal(CAPTURE(text, topo_compare_queue(&p.queues[0], same, p.hint, out)), 0);
    assert_string_equal(text, "");
    free(text);
    json_object_put(same);

    json_object *drift = json_tokener_parse(
        "{\"durable\":false,\"type\":\"quorum\",\"arguments\":{\"x-message-ttl\":60000,"
        "\"x-max-length\":10,\"x-queue-type\":\"quorum\"}}");
    assert_int_equal(CAPTURE(text, topo_compare_queue(&p.queues[0], drift, p.hint, out)), 5);
    assert_non_null(strstr(text, "queue 'worker.w1.executions' is a quorum queue but configuration "
                                 "wants classic: drain and delete the queue, then run `warren "
                                 "topology declare --worker w1`"));
    assert_non_null(strstr(text, "queue 'worker.w1.executions' is not durable"));
    assert_non_null(strstr(text, "queue 'worker.w1.executions' has x-message-ttl=60000 but "
                                 "configuration wants 300000: "));
    assert_non_null(strstr(text, "has no x-dead-letter-exchange but configuration wants "
                                 "'attune.dlx'"));
    assert_non_null(strstr(text, "has x-max-length=10 which configuration does not set"));
    free(text);
    json_object_put(drift);

    /* A string where a number belongs is drift too, not a crash. */
    json_object *mistyped = json_tokener_parse(
        "{\"durable\":true,\"arguments\":{\"x-message-ttl\":\"300000\","
        "\"x-dead-letter-exchange\":\"attune.dlx\"}}");
    assert_int_equal(CAPTURE(text, topo_compare_queue(&p.queues[0], mistyped, p.hint, out)), 1);
    assert_non_null(strstr(text, "x-message-ttl='300000' but configuration wants 300000"));
    free(text);
    json_object_put(mistyped);
}

static void test_compare_exchange(void **state)
{
    (void)state;
    topo_exchange_t want = {.name = "attune.dlx", .type = "fanout"};
    char *text = NULL;
    json_object *ok = json_tokener_parse("{\"type\":\"fanout\",\"durable\":true}");
    assert_int_equal(
        CAPTURE(text, topo_compare_exchange(&want, ok, "warren topology declare", out)), 0);
    free(text);
    json_object *direct = json_tokener_parse("{\"type\":\"direct\",\"durable\":true}");
    assert_int_equal(
        CAPTURE(text, topo_compare_exchange(&want, direct, "warren topology declare", out)), 1);
    assert_string_equal(text, "exchange 'attune.dlx' has type=direct but configuration wants "
                              "fanout: delete the exchange (its bindings go with it), then run "
                              "`warren topology declare`\n");
    free(text);
    json_object_put(ok);
    json_object_put(direct);
}

static void test_compare_bindings(void **state)
{
    (void)state;
    warren_config_t cfg = test_config(QUEUE_CLASSIC, true);
    topo_plan_t p;
    topo_plan_common(&cfg, &p);
    char *text = NULL;

    json_object *results = json_tokener_parse(
        "[{\"routing_key\":\"execution.status.#\"},{\"routing_key\":\"execution.completed.#\"}]");
    assert_int_equal(CAPTURE(text, topo_compare_bindings(&p, ex_exec, q_results, results, out)), 0);
    free(text);
    json_object_put(results);

    json_object *partial = json_tokener_parse(
        "[{\"routing_key\":\"execution.status.#\"},{\"routing_key\":\"#\"}]");
    assert_int_equal(CAPTURE(text, topo_compare_bindings(&p, ex_exec, q_results, partial, out)), 2);
    assert_non_null(strstr(text, "queue 'attune.execution.results' is not bound to exchange "
                                 "'attune.executions' with key 'execution.completed.#': run "
                                 "`warren topology declare`"));
    assert_non_null(strstr(text, "has an extra binding from exchange 'attune.executions' with "
                                 "key '#'"));
    free(text);
    json_object_put(partial);

    /* Fanout: any key links the DLQ; none is drift. */
    json_object *dlq = json_tokener_parse("[{\"routing_key\":\"whatever\"}]");
    assert_int_equal(CAPTURE(text, topo_compare_bindings(&p, ex_dlx, q_dlq, dlq, out)), 0);
    free(text);
    json_object_put(dlq);
    json_object *none = json_tokener_parse("[]");
    assert_int_equal(CAPTURE(text, topo_compare_bindings(&p, ex_dlx, q_dlq, none, out)), 1);
    assert_string_equal(text, "queue 'attune.dlx.queue' is not bound to exchange 'attune.dlx': "
                              "run `warren topology declare`\n");
    free(text);
    json_object_put(none);
}

static void test_explain_refusal(void **state)
{
    (void)state;
    char err[ERRBUF_SIZE];
    topo_explain_refusal(
        "queue", "worker.w1.executions",
        "406 PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue "
        "'worker.w1.executions' in vhost '/': received '300000' but current is '60000'",
        err, sizeof err);
    assert_string_equal(err, "queue 'worker.w1.executions' exists with x-message-ttl=60000 but "
                             "configuration wants 300000: drain and delete the queue or change "
                             "the configuration to match; see `warren topology verify`");

    topo_explain_refusal("queue", "q",
                         "406 PRECONDITION_FAILED - inequivalent arg 'x-dead-letter-exchange' for "
                         "queue 'q' in vhost '/': received the value 'attune.dlx' of type "
                         "'longstr' but current is none",
                         err, sizeof err);
    assert_string_equal(err, "queue 'q' exists without x-dead-letter-exchange but configuration "
                             "wants x-dead-letter-exchange=attune.dlx: drain and delete the "
                             "queue or change the configuration to match; see `warren topology "
                             "verify`");

    topo_explain_refusal("queue", "q",
                         "406 PRECONDITION_FAILED - inequivalent arg 'x-dead-letter-exchange' for "
                         "queue 'q' in vhost '/': received none but current is the value "
                         "'attune.dlx' of type 'longstr'",
                         err, sizeof err);
    assert_string_equal(err, "queue 'q' exists with x-dead-letter-exchange=attune.dlx which "
                             "configuration does not set: drain and delete the queue or change "
                             "the configuration to match; see `warren topology verify`");

    topo_explain_refusal("exchange", "attune.dlx",
                         "406 PRECONDITION_FAILED - inequivalent arg 'type' for exchange "
                         "'attune.dlx' in vhost '/': received 'fanout' but current is 'direct'",
                         err, sizeof err);
    assert_string_equal(err, "exchange 'attune.dlx' exists with type=direct but configuration "
                             "wants fanout: delete the exchange or change the configuration to "
                             "match; see `warren topology verify`");

    topo_explain_refusal("queue", "q", "405 RESOURCE_LOCKED - cannot obtain exclusive access", err,
                         sizeof err);
    assert_string_equal(err, "queue 'q': the broker refused the declaration (405 RESOURCE_LOCKED "
                             "- cannot obtain exclusive access); see `warren topology verify`");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common_plan),
        cmocka_unit_test(test_common_plan_without_dlx_and_quorum),
        cmocka_unit_test(test_worker_plan),
        cmocka_unit_test(test_control_plan),
        cmocka_unit_test(test_compare_queue),
        cmocka_unit_test(test_compare_exchange),
        cmocka_unit_test(test_compare_bindings),
        cmocka_unit_test(test_explain_refusal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
