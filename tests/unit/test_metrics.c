/* The metrics registry: histogram buckets, label escaping, the Prometheus text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "warren/metrics.h"

static const double bounds[] = {0.1, 1, 10};

static void test_histogram_buckets_are_cumulative(void **state)
{
    (void)state;
    metrics_hist_t h;
    metrics_hist_init(&h, bounds, 3);
    metrics_hist_observe(&h, 0.05);
    metrics_hist_observe(&h, 0.1); /* on the bound: in it */
    metrics_hist_observe(&h, 5);
    metrics_hist_observe(&h, 100); /* only +Inf */
    metrics_out_t o;
    metrics_out_init(&o);
    metrics_sample_hist(&o, "x_seconds", "a=\"b\"", &h);
    assert_false(o.failed);
    assert_non_null(strstr(o.buf, "x_seconds_bucket{a=\"b\",le=\"0.1\"} 2\n"));
    assert_non_null(strstr(o.buf, "x_seconds_bucket{a=\"b\",le=\"1\"} 2\n"));
    assert_non_null(strstr(o.buf, "x_seconds_bucket{a=\"b\",le=\"10\"} 3\n"));
    assert_non_null(strstr(o.buf, "x_seconds_bucket{a=\"b\",le=\"+Inf\"} 4\n"));
    assert_non_null(strstr(o.buf, "x_seconds_sum{a=\"b\"} 105.15\n"));
    assert_non_null(strstr(o.buf, "x_seconds_count{a=\"b\"} 4\n"));
    metrics_out_free(&o);
}

static void test_histogram_merge(void **state)
{
    (void)state;
    metrics_hist_t a, b = {0};
    metrics_hist_init(&a, bounds, 3);
    metrics_hist_observe(&a, 0.5);
    metrics_hist_merge(&b, &a); /* a zeroed one takes the bounds */
    metrics_hist_merge(&b, &a);
    assert_int_equal(b.count, 2);
    assert_int_equal(b.buckets[1], 2);
    assert_ptr_equal(b.bounds, bounds);
}

static void test_label_escaping_and_cut(void **state)
{
    (void)state;
    char l[512] = "";
    assert_int_equal(metrics_label(l, sizeof l, "action", "a\"b\\c\nd"), 0);
    assert_string_equal(l, "action=\"a\\\"b\\\\c\\nd\"");
    assert_int_equal(metrics_label(l, sizeof l, "x", "y"), 0);
    assert_string_equal(l, "action=\"a\\\"b\\\\c\\nd\",x=\"y\"");
    char small[8] = "";
    assert_int_equal(metrics_label(small, sizeof small, "key", "value"), -1);
    assert_string_equal(small, "");
    char long_value[300], big[600] = "";
    memset(long_value, 'v', sizeof long_value - 1);
    long_value[sizeof long_value - 1] = '\0';
    assert_int_equal(metrics_label(big, sizeof big, "k", long_value), 0);
    assert_int_equal(strlen(big), strlen("k=\"\"") + 128);
}

static void collect(metrics_out_t *o, void *arg)
{
    metrics_family(o, "late_total", "counter", "Written at scrape time");
    metrics_sample_u64(o, "late_total", "", *(uint64_t *)arg);
}

static void test_registry_reads_values_when_rendered(void **state)
{
    (void)state;
    metrics_registry_t r;
    metrics_init(&r);
    uint64_t a = 1, b = 2, late = 7;
    int64_t g = -3;
    assert_int_equal(metrics_add_u64(&r, METRIC_COUNTER, "c_total", "Help", "k=\"a\"", &a), 0);
    assert_int_equal(metrics_add_u64(&r, METRIC_COUNTER, "c_total", "Help", "k=\"b\"", &b), 0);
    assert_int_equal(metrics_add_i64(&r, "g", "A gauge", "", &g), 0);
    assert_int_equal(metrics_add_collector(&r, collect, &late), 0);
    a = 41; /* read when rendered, not when registered */
    metrics_out_t o;
    metrics_out_init(&o);
    metrics_render(&r, &o);
    assert_string_equal(o.buf, "# HELP c_total Help\n# TYPE c_total counter\n"
                               "c_total{k=\"a\"} 41\nc_total{k=\"b\"} 2\n"
                               "# HELP g A gauge\n# TYPE g gauge\ng -3\n"
                               "# HELP late_total Written at scrape time\n"
                               "# TYPE late_total counter\nlate_total 7\n");
    metrics_out_free(&o);
    metrics_free(&r);
}

static void test_output_grows(void **state)
{
    (void)state;
    metrics_out_t o;
    metrics_out_init(&o);
    for (int i = 0; i < 2000; i++)
        metrics_sample(&o, "a_metric_with_a_long_name", "", 0.25);
    assert_false(o.failed);
    assert_int_equal(o.len, 2000 * strlen("a_metric_with_a_long_name 0.25\n"));
    metrics_out_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histogram_buckets_are_cumulative),
        cmocka_unit_test(test_histogram_merge),
        cmocka_unit_test(test_label_escaping_and_cut),
        cmocka_unit_test(test_registry_reads_values_when_rendered),
        cmocka_unit_test(test_output_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
