/* The worker's execution bookkeeping: stages and counts, held order, deliveries, recent keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
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

/* A finished record's kept completion of n bytes (the contents do not matter here). */
static void finish_with_kept(execs_t *t, int64_t id, size_t n)
{
    execs_record_t *x = execs_add(t, id, 1);
    x->kept = calloc(1, n);
    x->kept_bytes = n;
    execs_remove(t, x, true);
}

/* The completion stays with its key; taking it forgets the key until a record gives it back. */
static void test_recent_keeps_completion(void **state)
{
    (void)state;
    execs_t t;
    execs_init(&t);
    finish_with_kept(&t, 5, 100);
    report_msg_completion_t *kept = NULL;
    size_t bytes = 0;
    assert_false(execs_recent_take(&t, 5, 2, &kept, &bytes));
    assert_true(execs_recent_take(&t, 5, 1, &kept, &bytes));
    assert_non_null(kept);
    assert_int_equal(bytes, 100);
    assert_int_equal(t.recent_bytes, 0);
    assert_false(execs_recent(&t, 5, 1)); /* taken */
    /* A held record with it (a repeat) puts it back when removed, finished or not. */
    execs_record_t *x = execs_add(&t, 5, 1);
    x->kept = kept;
    x->kept_bytes = bytes;
    execs_remove(&t, x, false);
    assert_true(execs_recent(&t, 5, 1));
    assert_int_equal(t.recent_bytes, 100);
    execs_free(&t);
}

/* Past the memory bound the oldest completions go, their keys stay; a full ring frees what
 * it overwrites. */
static void test_recent_memory_bound(void **state)
{
    (void)state;
    execs_t t;
    execs_init(&t);
    size_t big = EXECS_RECENT_BYTES / 4 + 1;
    for (int64_t id = 1; id <= 4; id++)
        finish_with_kept(&t, id, big);
    assert_true(t.recent_bytes <= EXECS_RECENT_BYTES);
    report_msg_completion_t *kept = NULL;
    size_t bytes = 0;
    assert_true(execs_recent_take(&t, 1, 1, &kept, &bytes));
    assert_null(kept); /* reclaimed, but the key is known */
    assert_true(execs_recent_take(&t, 4, 1, &kept, &bytes));
    assert_non_null(kept);
    free(kept);
    for (int64_t id = 100; id < 100 + 2 * EXECS_RECENT; id++)
        finish_with_kept(&t, id, 10);
    assert_int_equal(t.recent_bytes, 10 * EXECS_RECENT);
    execs_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stages_and_counts),   cmocka_unit_test(test_tags_and_params),
        cmocka_unit_test(test_recent_finished),     cmocka_unit_test(test_recent_keeps_completion),
        cmocka_unit_test(test_recent_memory_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
