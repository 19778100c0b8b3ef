/* Execution state machine: every (from, to) pair, names, and the SQL guard literals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "executor/transitions.h"

/* The expected table, written out independently of transitions.c as "from to" lines. */
static const char *const legal_pairs[] = {
    "requested scheduling", "requested scheduled",  "requested cancelled", "requested failed",
    "scheduling scheduled", "scheduling requested", "scheduled running",   "scheduled requested",
    "scheduled failed",     "scheduled completed",  "scheduled timeout",   "scheduled canceling",
    "scheduled cancelled",  "running completed",    "running failed",      "running timeout",
    "running canceling",    "running abandoned",    "canceling cancelled", "canceling completed",
    "canceling failed",     "canceling timeout",    "canceling abandoned", "abandoned completed",
    "abandoned failed",     "abandoned timeout",    "abandoned requested", "failed requested",
    "timeout requested",
};

static bool expected_legal(const char *from, const char *to)
{
    char pair[64];
    snprintf(pair, sizeof pair, "%s %s", from, to);
    for (size_t i = 0; i < sizeof legal_pairs / sizeof legal_pairs[0]; i++)
        if (!strcmp(legal_pairs[i], pair))
            return true;
    return false;
}

static void every_pair_matches_the_table(void **state)
{
    (void)state;
    int legal = 0;
    for (int f = 0; f < EXEC_STATUS_COUNT; f++)
        for (int t = 0; t < EXEC_STATUS_COUNT; t++) {
            const char *from = trans_status_name((exec_status_t)f);
            const char *to = trans_status_name((exec_status_t)t);
            bool want = expected_legal(from, to);
            if (trans_legal((exec_status_t)f, (exec_status_t)t) != want)
                fail_msg("%s -> %s: expected %s", from, to, want ? "legal" : "illegal");
            legal += want;
        }
    assert_int_equal(legal, (int)(sizeof legal_pairs / sizeof legal_pairs[0]));
}

/* Terminal statuses have no way out, except a late completion of an abandoned attempt and a
 * retry (back to requested) of a failed, timed out or abandoned one. */
static void terminal_statuses_have_no_way_out(void **state)
{
    (void)state;
    const char *terminal[] = {"completed", "failed", "cancelled", "timeout", "abandoned"};
    for (size_t i = 0; i < 5; i++) {
        exec_status_t s;
        assert_int_equal(trans_status_parse(terminal[i], &s), 0);
        assert_true(trans_is_terminal(s));
        for (int t = 0; t < EXEC_STATUS_COUNT; t++)
            assert_int_equal(trans_legal(s, (exec_status_t)t),
                             (s == EXEC_ABANDONED &&
                              (t == EXEC_COMPLETED || t == EXEC_FAILED || t == EXEC_TIMEOUT)) ||
                                 ((s == EXEC_ABANDONED || s == EXEC_FAILED || s == EXEC_TIMEOUT) &&
                                  t == EXEC_REQUESTED));
    }
    const char *open[] = {"requested", "scheduling", "scheduled", "running", "canceling"};
    for (size_t i = 0; i < 5; i++) {
        exec_status_t s;
        assert_int_equal(trans_status_parse(open[i], &s), 0);
        assert_false(trans_is_terminal(s));
    }
}

static void names_round_trip_and_junk_is_refused(void **state)
{
    (void)state;
    for (int i = 0; i < EXEC_STATUS_COUNT; i++) {
        exec_status_t s;
        assert_int_equal(trans_status_parse(trans_status_name((exec_status_t)i), &s), 0);
        assert_int_equal(s, i);
    }
    exec_status_t s;
    assert_int_equal(trans_status_parse("Running", &s), -1);
    assert_int_equal(trans_status_parse("", &s), -1);
    assert_int_equal(trans_status_parse(NULL, &s), -1);
    assert_string_equal(trans_status_name(EXEC_STATUS_COUNT), "unknown");
    assert_false(trans_legal(EXEC_STATUS_COUNT, EXEC_FAILED));
    assert_false(trans_legal(EXEC_RUNNING, (exec_status_t)-1));
}

/* The writes whose guard is one status spelled EXEC_SQL(NAME) in their statement, not taken
 * from the table: they must still be edges of it. */
static void hand_written_guards_are_legal(void **state)
{
    (void)state;
    assert_true(trans_legal(EXEC_REQUESTED, EXEC_SCHEDULED)); /* scheduler.c: update_sql */
    assert_true(trans_legal(EXEC_REQUESTED, EXEC_FAILED));    /* scheduler.c: update_sql */
    assert_true(trans_legal(EXEC_SCHEDULED, EXEC_REQUESTED)); /* scheduler.c: revert_sql */
    assert_true(trans_legal(EXEC_SCHEDULED, EXEC_FAILED));    /* monitor.c: scheduled_sql */
}

static void sources_literal_lists_predecessors(void **state)
{
    (void)state;
    char buf[256];
    assert_int_equal(trans_sources_literal(EXEC_ABANDONED, buf, sizeof buf), 0);
    assert_string_equal(buf, "{running,canceling}");
    assert_int_equal(trans_sources_literal(EXEC_FAILED, buf, sizeof buf), 0);
    assert_string_equal(buf, "{requested,scheduled,running,canceling,abandoned}");
    assert_int_equal(trans_sources_literal(EXEC_REQUESTED, buf, sizeof buf), 0);
    assert_string_equal(buf, "{scheduling,scheduled,failed,timeout,abandoned}");
    assert_int_equal(trans_sources_literal(EXEC_FAILED, buf, 10), -1);
}

static void pairs_literal_is_parallel(void **state)
{
    (void)state;
    char from[256], to[256];
    exec_status_t targets[] = {EXEC_RUNNING, EXEC_TIMEOUT};
    assert_int_equal(trans_pairs_literal(targets, 2, from, to, sizeof from), 0);
    assert_string_equal(from, "{scheduled,scheduled,running,canceling,abandoned}");
    assert_string_equal(to, "{running,timeout,timeout,timeout,timeout}");
    assert_int_equal(trans_pairs_literal(targets, 2, from, to, 12), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pair_matches_the_table),
        cmocka_unit_test(terminal_statuses_have_no_way_out),
        cmocka_unit_test(names_round_trip_and_junk_is_refused),
        cmocka_unit_test(hand_written_guards_are_legal),
        cmocka_unit_test(sources_literal_lists_predecessors),
        cmocka_unit_test(pairs_literal_is_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
