/* Unit tests for the queue names and routing keys derived from worker ids (the id rule:
 * test_ids). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "warren/ids.h"
#include "warren/topology.h"

static void test_names(void **state)
{
    (void)state;
    char buf[128];
    assert_int_equal(topo_worker_queue("w1", buf, sizeof buf), 0);
    assert_string_equal(buf, "worker.w1.executions");
    assert_int_equal(topo_dispatch_key("node.eu-1", buf, sizeof buf), 0);
    assert_string_equal(buf, "execution.dispatch.worker.node.eu-1");
    assert_int_equal(topo_control_queue("w1", buf, sizeof buf), 0);
    assert_string_equal(buf, "worker.w1.control");
    assert_int_equal(topo_cancel_key("node.eu-1", buf, sizeof buf), 0);
    assert_string_equal(buf, "execution.cancel.worker.node.eu-1");
    assert_int_equal(topo_control_queue("w*", buf, sizeof buf), -1);
    assert_int_equal(topo_cancel_key("a..b", buf, sizeof buf), -1);

    /* Invalid ids never become names. */
    assert_int_equal(topo_worker_queue("w#", buf, sizeof buf), -1);
    assert_int_equal(topo_dispatch_key("", buf, sizeof buf), -1);

    /* Too small a buffer is an error, not a truncated name. */
    char small[sizeof "worker.w1.executions"];
    assert_int_equal(topo_worker_queue("w1", small, sizeof small), 0);
    assert_int_equal(topo_worker_queue("w12", small, sizeof small), -1);
    assert_int_equal(topo_dispatch_key("w1", small, 10), -1);
}

/* The longest id still fits a queue name (AMQP short string, 255 bytes). */
static void test_longest_id_fits(void **state)
{
    (void)state;
    char id[WORKER_ID_MAX + 1];
    memset(id, 'a', WORKER_ID_MAX);
    id[WORKER_ID_MAX] = '\0';
    char buf[256];
    assert_int_equal(topo_worker_queue(id, buf, sizeof buf), 0);
    assert_int_equal(strlen(buf), strlen("worker..executions") + WORKER_ID_MAX);
    assert_int_equal(topo_dispatch_key(id, buf, sizeof buf), 0);
    assert_int_equal(topo_control_queue(id, buf, sizeof buf), 0);
    assert_int_equal(topo_cancel_key(id, buf, sizeof buf), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_longest_id_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
