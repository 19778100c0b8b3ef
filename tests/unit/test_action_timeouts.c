/* worker.action_timeouts: "action=seconds,..." validation and lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "warren/action_timeouts.h"

static void test_lookup(void **state)
{
    (void)state;
    const char *spec = "core.sleep=60,reports.build=3600,x=1";
    assert_int_equal(action_timeouts_lookup(spec, "core.sleep"), 60);
    assert_int_equal(action_timeouts_lookup(spec, "reports.build"), 3600);
    assert_int_equal(action_timeouts_lookup(spec, "x"), 1);
    assert_int_equal(action_timeouts_lookup(spec, "core"), 0); /* no prefix match */
    assert_int_equal(action_timeouts_lookup(spec, "core.sleepy"), 0);
    assert_int_equal(action_timeouts_lookup("", "core.sleep"), 0);
    assert_int_equal(action_timeouts_lookup(NULL, "core.sleep"), 0);
}

static void test_check_accepts(void **state)
{
    (void)state;
    char why[256];
    assert_int_equal(action_timeouts_check("", why, sizeof why), 0);
    assert_int_equal(action_timeouts_check("a=1", why, sizeof why), 0);
    assert_int_equal(action_timeouts_check("core.sleep=604800,b-c_d=5", why, sizeof why), 0);
}

static void expect_refused(const char *spec, const char *entry)
{
    char why[256] = "";
    assert_int_equal(action_timeouts_check(spec, why, sizeof why), -1);
    if (!strstr(why, entry))
        fail_msg("'%s' does not name entry '%s'", why, entry);
}

static void test_check_refuses(void **state)
{
    (void)state;
    expect_refused("core.sleep", "'core.sleep'"); /* no '=' */
    expect_refused("a=1,=5", "'=5'");             /* no action */
    expect_refused("a=0", "'a=0'");               /* below 1 */
    expect_refused("a=604801", "'a=604801'");     /* above 7 days */
    expect_refused("a=1x", "'a=1x'");
    expect_refused("a=", "'a='");
    expect_refused("a b=1", "'a b=1'");
    expect_refused(".hidden=1", "'.hidden=1'");
    expect_refused("a=99999999999999999999", "'a=99999999999999999999'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_check_accepts),
        cmocka_unit_test(test_check_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
