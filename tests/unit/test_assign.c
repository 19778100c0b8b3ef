/* Worker choice: pinned first, least loaded by in-flight / capacity, wait reasons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "executor/assign.h"

static const char *const echo_sleep[] = {"echo", "sleep"};
static const char *const echo_only[] = {"echo"};

static assign_job_t job(const char *action, const char *pinned)
{
    assign_job_t j;
    memset(&j, 0, sizeof j);
    j.action_ref = action;
    j.pinned_worker = pinned;
    return j;
}

static void least_loaded_by_ratio_then_count_then_order(void **state)
{
    (void)state;
    assign_worker_t w[] = {
        {.id = "a", .capabilities = echo_sleep, .n_capabilities = 2, .capacity = 2, .in_flight = 1},
        {.id = "b", .capabilities = echo_only, .n_capabilities = 1, .capacity = 10, .in_flight = 4},
        {.id = "c", .capabilities = echo_only, .n_capabilities = 1, .capacity = 4, .in_flight = 0},
    };
    assign_job_t jobs[] = {job("echo", NULL), job("echo", NULL), job("echo", NULL),
                           job("echo", NULL), job("echo", NULL)};
    assign_batch(w, 3, jobs, 5);
    /* loads a 1/2, b 4/10, c 0/4 -> c (0); then c 1/4 = 0.25 -> c; 2/4 = 0.5 vs b 0.4 -> b;
     * then b 5/10 = a 1/2 = c 2/4: fewer in flight wins -> a (1); then a 2/2 full, b 0.5 = c 0.5,
     * c has fewer in flight -> c. */
    int want[] = {2, 2, 1, 0, 2};
    for (int i = 0; i < 5; i++)
        assert_int_equal(jobs[i].worker, want[i]);
    assert_int_equal(w[0].in_flight, 2);
    assert_int_equal(w[1].in_flight, 5);
    assert_int_equal(w[2].in_flight, 3);
}

static void capability_and_capacity_decide_the_wait_reason(void **state)
{
    (void)state;
    assign_worker_t w[] = {
        {.id = "a", .capabilities = echo_sleep, .n_capabilities = 2, .capacity = 1, .in_flight = 0},
        {.id = "b", .capabilities = echo_sleep, .n_capabilities = 2, .capacity = 1, .in_flight = 1},
    };
    assign_job_t jobs[] = {job("sleep", NULL), job("sleep", NULL), job("deploy", NULL)};
    assign_batch(w, 2, jobs, 3);
    assert_int_equal(jobs[0].worker, 0);
    assert_string_equal(jobs[0].wait_reason, "");
    assert_int_equal(jobs[1].worker, ASSIGN_NONE);
    assert_string_equal(jobs[1].wait_reason, "all 2 live workers offering 'sleep' are at capacity");
    assert_int_equal(jobs[2].worker, ASSIGN_NONE);
    assert_string_equal(jobs[2].wait_reason, "no live worker offers action 'deploy'");
}

static void pinned_goes_to_its_worker_live_or_not(void **state)
{
    (void)state;
    assign_worker_t w[] = {
        {.id = "a", .capabilities = echo_only, .n_capabilities = 1, .capacity = 1, .in_flight = 0},
    };
    assign_job_t jobs[] = {job("anything", "dead-worker"), job("echo", "a"), job("echo", NULL)};
    assign_batch(w, 1, jobs, 3);
    assert_int_equal(jobs[0].worker, ASSIGN_PINNED);
    assert_int_equal(jobs[1].worker, ASSIGN_PINNED);
    /* The pinned job took a's only slot, even over capacity: pinning is the operator's call. */
    assert_int_equal(w[0].in_flight, 1);
    assert_int_equal(jobs[2].worker, ASSIGN_NONE);
}

static void no_workers_at_all(void **state)
{
    (void)state;
    assign_job_t jobs[] = {job("echo", NULL), job("echo", "")};
    assign_batch(NULL, 0, jobs, 2);
    assert_int_equal(jobs[0].worker, ASSIGN_NONE);
    assert_int_equal(jobs[1].worker, ASSIGN_NONE); /* "" is not a pin */
    assert_string_equal(jobs[1].wait_reason, "no live worker offers action 'echo'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(least_loaded_by_ratio_then_count_then_order),
        cmocka_unit_test(capability_and_capacity_decide_the_wait_reason),
        cmocka_unit_test(pinned_goes_to_its_worker_live_or_not),
        cmocka_unit_test(no_workers_at_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
