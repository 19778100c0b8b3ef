/* The worker's execution bookkeeping: stages and counts, held order, deliveries, recent keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "worker/execs.h"

static void test_stages_and_counts(void **state)
{
    (void)state;
    execs_t t;
    execs_init(&t);
    execs_record_t *a = execs_add(&t, 1, 1), *b = execs_add(&t, 2, 1), *c = execs_add(&t, 1, 2);
    assert_non_null(a);
    assert_int_equal(execs_count(&t, STAGE_HELD), 3);
    assert_ptr_equal(execs_find(&t, 1, 2), c); /* attempts are different executions */
    assert_null(execs_find(&t, 3, 1));
    assert_ptr_equal(execs_first_held(&t), a); /* first come, first started */
    execs_set_stage(&t, a, STAGE_RUNNING);
    assert_ptr_equal(execs_first_held(&t), b);
    execs_set_stage(&t, a, STAGE_FINISHED);
    assert_int_equal(execs_count(&t, STAGE_HELD), 2);
    assert_int_equal(execs_count(&t, STAGE_RUNNING), 0);
    assert_int_equal(execs_count(&t, STAGE_FINISHED), 1);
    execs_remove(&t, b, false);
    assert_int_equal(execs_count(&t, STAGE_HELD), 1);
    assert_ptr_equal(execs_first_held(&t), c);
    execs_free(&t);
    assert_null(t.head);
}

static void test_tags_and_params(void **state)
{
    (void)state;
    execs_t t;
    execs_init(&t);
    execs_record_t *x = execs_add(&t, 7, 1);
    for (uint64_t tag = 1; tag <= 9; tag++)
        assert_int_equal(execs_add_tag(x, tag), 0);
    assert_int_equal(x->n_tags, 9);
    assert_true(x->tags[8] == 9);
    assert_int_equal(execs_set_params(x, "{\"a\":1}xyz", 7), 0);
    assert_string_equal(x->params, "{\"a\":1}");
    assert_int_equal(x->params_len, 7);
    execs_free(&t);
}

static void test_recent_finished(void **state)
{
    (void)state;
    execs_t t;
    execs_init(&t);
    execs_remove(&t, execs_add(&t, 5, 1), true);
    execs_remove(&t, execs_add(&t, 6, 1), false); /* not finished: not remembered */
    assert_true(execs_recent(&t, 5, 1));
    assert_false(execs_recent(&t, 5, 2));
    assert_false(execs_recent(&t, 6, 1));
    assert_null(execs_find(&t, 5, 1));
    /* The ring forgets the oldest once full. */
    for (int64_t id = 100; id < 100 + EXECS_RECENT; id++)
        execs_remove(&t, execs_add(&t, id, 1), true);
    assert_false(execs_recent(&t, 5, 1));
    assert_true(execs_recent(&t, 100, 1));
    assert_true(execs_recent(&t, 100 + EXECS_RECENT - 1, 1));
    execs_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stages_and_counts),
        cmocka_unit_test(test_tags_and_params),
        cmocka_unit_test(test_recent_finished),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
