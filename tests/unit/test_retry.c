/* Retry policies: the decision table, delays and jitter with an injected random source, the
 * text forms of retry_on, jitter and the key `actions`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "warren/retry.h"

static double fixed(void *ctx)
{
    return *(double *)ctx;
}

static retry_policy_t policy(int max, unsigned on, const char *never)
{
    retry_policy_t p;
    retry_policy_default(&p);
    p.max_attempts = max;
    p.retry_on = on;
    p.jitter = JITTER_NONE;
    snprintf(p.never, sizeof p.never, "%s", never);
    return p;
}

static void test_decision_table(void **state)
{
    (void)state;
    static const struct {
        int max;
        unsigned on;
        const char *never;
        int attempt;
        attempt_outcome_t o;
        const char *type;
        retry_verdict_t want;
        int64_t delay; /* exponential 1000 * 2^(attempt-1), no jitter */
    } cases[] = {
        {3, RETRY_ON_TEMPFAIL, "", 1, OUTCOME_COMPLETED, "", RETRY_NO_FAILURE, 0},
        {3, RETRY_ON_TEMPFAIL, "", 1, OUTCOME_TEMPFAIL, "", RETRY_AGAIN, 1000},
        {3, RETRY_ON_TEMPFAIL, "", 2, OUTCOME_TEMPFAIL, "", RETRY_AGAIN, 2000},
        {3, RETRY_ON_TEMPFAIL, "", 3, OUTCOME_TEMPFAIL, "", RETRY_EXHAUSTED, 0},
        {3, RETRY_ON_TEMPFAIL, "", 1, OUTCOME_FAILED, "", RETRY_NOT_RETRYABLE, 0},
        {3, RETRY_ON_FAILED, "", 1, OUTCOME_TEMPFAIL, "", RETRY_AGAIN, 1000}, /* failed: any */
        {3, RETRY_ON_FAILED, "", 1, OUTCOME_FAILED, "", RETRY_AGAIN, 1000},
        {3, RETRY_ON_FAILED, "", 1, OUTCOME_TIMEOUT, "", RETRY_NOT_RETRYABLE, 0},
        {3, RETRY_ON_TIMEOUT, "", 2, OUTCOME_TIMEOUT, "", RETRY_AGAIN, 2000},
        {3, RETRY_ON_WORKER_LOST, "", 1, OUTCOME_WORKER_LOST, "", RETRY_AGAIN, 1000},
        {3, RETRY_ON_TEMPFAIL, "", 1, OUTCOME_WORKER_LOST, "", RETRY_NOT_RETRYABLE, 0},
        {1, RETRY_ON_FAILED, "", 1, OUTCOME_FAILED, "", RETRY_NOT_RETRYABLE, 0}, /* the default */
        {5, RETRY_ON_FAILED, "ValueError,KeyError", 1, OUTCOME_FAILED, "KeyError", RETRY_NEVER, 0},
        {5, RETRY_ON_FAILED, "ValueError", 1, OUTCOME_FAILED, "Value", RETRY_AGAIN, 1000},
        {5, RETRY_ON_FAILED, "ValueError", 1, OUTCOME_FAILED, NULL, RETRY_AGAIN, 1000},
        {9, RETRY_ON_FAILED | RETRY_ON_TIMEOUT | RETRY_ON_WORKER_LOST, "", 1, OUTCOME_CANCELLED, "",
         RETRY_CANCELLED, 0},
        {9, RETRY_ON_FAILED, "", 12, OUTCOME_FAILED, "", RETRY_EXHAUSTED, 0}, /* manual extra */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        retry_policy_t p = policy(cases[i].max, cases[i].on, cases[i].never);
        double u = 0.5;
        retry_decision_t d = retry_decide(&p, cases[i].attempt, cases[i].o, cases[i].type, fixed,
                                          &u);
        if (d.verdict != cases[i].want || d.delay_ms != cases[i].delay)
            fail_msg("case %zu: verdict %s delay %lld, want %s %lld", i,
                     retry_verdict_name(d.verdict), (long long)d.delay_ms,
                     retry_verdict_name(cases[i].want), (long long)cases[i].delay);
    }
}

static void test_delays(void **state)
{
    (void)state;
    retry_policy_t p = policy(10, RETRY_ON_FAILED, "");
    p.base_ms = 500;
    p.factor = 3;
    p.max_ms = 10000;
    assert_int_equal(retry_base_delay_ms(&p, 1), 500);
    assert_int_equal(retry_base_delay_ms(&p, 2), 1500);
    assert_int_equal(retry_base_delay_ms(&p, 3), 4500);
    assert_int_equal(retry_base_delay_ms(&p, 4), 10000); /* capped */
    assert_int_equal(retry_base_delay_ms(&p, 999), 10000);
    p.factor = 1;
    assert_int_equal(retry_base_delay_ms(&p, 50), 500);
    p.backoff = BACKOFF_POLYNOMIAL;
    p.max_ms = RETRY_MAX_DELAY_MS;
    assert_int_equal(retry_base_delay_ms(&p, 1), 1000);
    assert_int_equal(retry_base_delay_ms(&p, 2), 16000);
    assert_int_equal(retry_base_delay_ms(&p, 3), 81000);
    assert_int_equal(retry_base_delay_ms(&p, 1000), RETRY_MAX_DELAY_MS);
    p.max_ms = 20000;
    assert_int_equal(retry_base_delay_ms(&p, 3), 20000);
}

static void test_jitter(void **state)
{
    (void)state;
    retry_policy_t p = policy(3, RETRY_ON_TEMPFAIL, "");
    p.jitter = JITTER_FULL;
    assert_int_equal(retry_jittered_ms(&p, 1000, 0.0), 0);
    assert_int_equal(retry_jittered_ms(&p, 1000, 0.25), 250);
    assert_true(retry_jittered_ms(&p, 1000, 0.9999999) <= 1000);
    assert_int_equal(retry_jittered_ms(&p, 1000, -1), 0); /* clamped */
    p.jitter = JITTER_PERCENT;
    p.jitter_pct = 20;
    assert_int_equal(retry_jittered_ms(&p, 1000, 0.0), 800);
    assert_int_equal(retry_jittered_ms(&p, 1000, 0.5), 1000);
    assert_true(retry_jittered_ms(&p, 1000, 0.9999999) <= 1200);
    /* the decision takes exactly one number from the source and applies it */
    double u = 0.1;
    p.jitter = JITTER_FULL;
    retry_decision_t d = retry_decide(&p, 2, OUTCOME_TEMPFAIL, "", fixed, &u);
    assert_int_equal(d.verdict, RETRY_AGAIN);
    assert_int_equal(d.delay_ms, 200);
}

static void test_text_forms(void **state)
{
    (void)state;
    char why[256], buf[512];
    unsigned bits;
    assert_int_equal(retry_on_parse("tempfail, worker_lost", &bits, why, sizeof why), 0);
    assert_int_equal(bits, RETRY_ON_TEMPFAIL | RETRY_ON_WORKER_LOST);
    retry_on_text(bits, buf, sizeof buf);
    assert_string_equal(buf, "tempfail,worker_lost");
    assert_int_equal(retry_on_parse("tempfail,exploded", &bits, why, sizeof why), -1);
    assert_non_null(strstr(why, "exploded"));
    assert_int_equal(retry_on_parse("", &bits, why, sizeof why), -1);
    assert_int_equal(retry_jitter_check("full", why, sizeof why), 0);
    assert_int_equal(retry_jitter_check("25%", why, sizeof why), 0);
    assert_int_equal(retry_jitter_check("0%", why, sizeof why), -1);
    assert_int_equal(retry_jitter_check("101%", why, sizeof why), -1);
    assert_int_equal(retry_jitter_check("half", why, sizeof why), -1);
    assert_int_equal(retry_never_check("ValueError,db.Conflict", why, sizeof why), 0);
    assert_int_equal(retry_never_check("a,,b", why, sizeof why), -1);
    assert_int_equal(retry_never_check("bad type", why, sizeof why), -1);
    retry_policy_t p;
    retry_policy_default(&p);
    retry_policy_text(&p, buf, sizeof buf);
    assert_string_equal(buf, "max_attempts=1 backoff=exponential base_ms=1000 factor=2 "
                             "max_ms=3600000 jitter=full retry_on=tempfail,worker_lost "
                             "never_retry=");
    char type[64];
    retry_error_type("ValueError: bad input", type, sizeof type);
    assert_string_equal(type, "ValueError");
    retry_error_type("exit code 3", type, sizeof type);
    assert_string_equal(type, "");
    retry_error_type(NULL, type, sizeof type);
    assert_string_equal(type, "");
}

static void test_actions(void **state)
{
    (void)state;
    char why[256];
    const char *spec = "core.fail: max_attempts=3 retry_on=tempfail,timeout jitter=10%;"
                       " reports.build: backoff=polynomial queue_timeout_s=600;"
                       " core.fail: base_ms=250";
    assert_int_equal(retry_actions_check(spec, why, sizeof why), 0);
    assert_int_equal(retry_actions_check("", why, sizeof why), 0);
    retry_policy_t d, p;
    retry_policy_default(&d);
    d.max_ms = 5000;
    assert_int_equal(retry_policy_for(spec, "core.fail", &d, &p), 0);
    assert_int_equal(p.max_attempts, 3);
    assert_int_equal(p.retry_on, RETRY_ON_TEMPFAIL | RETRY_ON_TIMEOUT);
    assert_int_equal(p.jitter, JITTER_PERCENT);
    assert_int_equal(p.jitter_pct, 10);
    assert_int_equal(p.base_ms, 250); /* the later entry adds to the earlier */
    assert_int_equal(p.max_ms, 5000); /* inherited from the default */
    assert_int_equal(retry_policy_for(spec, "reports.build", &d, &p), 0);
    assert_int_equal(p.backoff, BACKOFF_POLYNOMIAL);
    assert_int_equal(p.max_attempts, 1);
    assert_int_equal(p.queue_timeout_s, 600); /* actions.<ref>.queue_timeout_s */
    assert_int_equal(retry_policy_for(spec, "core.fail", &d, &p), 0);
    assert_int_equal(p.queue_timeout_s, 0); /* none unless set */
    assert_int_equal(retry_policy_for(spec, "core", &d, &p), 0);
    assert_memory_equal(&p, &d, sizeof p);
    static const char *const bad[] = {
        "core.fail max_attempts=3",      "core.fail: max_attempts=0",
        "core.fail: max_attempts=x",     "core.fail: colour=blue",
        "core.fail: retry_on=sometimes", "core.fail: backoff=linear",
        "core fail: max_attempts=2",     ".x: max_attempts=2",
        "core.fail: max_attempts",       "core.fail: jitter=50",
        "core.fail: queue_timeout_s=-1", "core.fail: queue_timeout_s=31622401",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (retry_actions_check(bad[i], why, sizeof why) != -1)
            fail_msg("accepted '%s'", bad[i]);
    assert_int_equal(retry_actions_check("core.fail: max_attempts=0", why, sizeof why), -1);
    assert_non_null(strstr(why, "core.fail: max_attempts"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decision_table), cmocka_unit_test(test_delays),
        cmocka_unit_test(test_jitter),         cmocka_unit_test(test_text_forms),
        cmocka_unit_test(test_actions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
