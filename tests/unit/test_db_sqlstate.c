/* Which SQLSTATEs the executor retries as transient rather than treating the input as poison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "warren/db.h"

static void transient_classes_are_40_55_57(void **state)
{
    (void)state;
    assert_true(db_sqlstate_transient("40001"));  /* serialization_failure */
    assert_true(db_sqlstate_transient("40P01"));  /* deadlock_detected */
    assert_true(db_sqlstate_transient("55P03"));  /* lock_not_available */
    assert_true(db_sqlstate_transient("57014"));  /* query_canceled: statement_timeout */
    assert_true(db_sqlstate_transient("57P01"));  /* admin_shutdown */
    assert_false(db_sqlstate_transient("22003")); /* numeric_value_out_of_range: the input */
    assert_false(db_sqlstate_transient("22P02")); /* invalid_text_representation */
    assert_false(db_sqlstate_transient("23505")); /* unique_violation */
    assert_false(db_sqlstate_transient("42601")); /* syntax_error */
    assert_false(db_sqlstate_transient(""));
    assert_false(db_sqlstate_transient(NULL));
}

static void no_connection_has_no_state(void **state)
{
    (void)state;
    assert_string_equal(db_last_sqlstate(NULL), "");
    assert_true(db_connection_lost(NULL));
    db_set_timeout(NULL, 1000); /* harmless */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(transient_classes_are_40_55_57),
        cmocka_unit_test(no_connection_has_no_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
