/*
 * The metrics registry both daemons serve on /metrics, in the Prometheus text format (0.0.4).
 * A daemon's counters stay where they are counted (executor/stats.h, the worker's stats): the
 * registry only names them, with their help text and labels, and reads them when scraped, so
 * the same fields feed /metrics and the periodic stats log line. Histograms are kept here.
 * Families whose label values change at run time (dead letters by reason, handler durations by
 * action) are written by a collector callback at scrape time. Single-threaded: the loop's.
 */
#ifndef WARREN_METRICS_H
#define WARREN_METRICS_H

#include <stdio.h>
#include "warren/common.h"

/* ---- histograms ---- */

#define METRICS_HIST_MAX_BUCKETS 16

/* Cumulative on output; here each bucket counts the observations <= its bound that were not
 * <= the bound before (the last, implicit +Inf bucket is count). */
typedef struct metrics_hist {
    const double *bounds; /* ascending upper bounds, borrowed (static tables) */
    size_t n_bounds;      /* <= METRICS_HIST_MAX_BUCKETS */
    uint64_t buckets[METRICS_HIST_MAX_BUCKETS];
    uint64_t count;
    double sum;
} metrics_hist_t;

/* Bucket bounds in seconds for latencies from a millisecond to ten minutes. */
extern const double metrics_seconds_bounds[];
extern const size_t metrics_seconds_bounds_len;
/* Bounds for short operations (a publish and its confirm): 1 ms to 10 s. */
extern const double metrics_fast_bounds[];
extern const size_t metrics_fast_bounds_len;

void metrics_hist_init(metrics_hist_t *h, const double *bounds, size_t n_bounds);
void metrics_hist_observe(metrics_hist_t *h, double value);
/* Add src's observations to dst (same bounds). */
void metrics_hist_merge(metrics_hist_t *dst, const metrics_hist_t *src);

/* ---- writing the text format ---- */

/* One scrape's output. Write with the functions below; it grows as needed. */
typedef struct metrics_out {
    char *buf;
    size_t len, cap;
    bool failed; /* out of memory: the scrape is refused */
} metrics_out_t;

void metrics_out_init(metrics_out_t *o);
void metrics_out_free(metrics_out_t *o);
/* # HELP and # TYPE lines ("counter", "gauge", "histogram"). */
void metrics_family(metrics_out_t *o, const char *name, const char *type, const char *help);
/* One sample: name{labels} value. labels is "" or rendered pairs (metrics_label). */
void metrics_sample(metrics_out_t *o, const char *name, const char *labels, double value);
void metrics_sample_u64(metrics_out_t *o, const char *name, const char *labels, uint64_t value);
/* The _bucket, _sum and _count lines of one histogram with these labels. */
void metrics_sample_hist(metrics_out_t *o, const char *name, const char *labels,
                         const metrics_hist_t *h);
/* Append key="value" to labels (len bytes), comma-separated, the value escaped (\\, \", \n)
 * and cut at 128 bytes. -1 when it does not fit (labels unchanged). */
int metrics_label(char *labels, size_t len, const char *key, const char *value);

/* ---- the registry ---- */

typedef enum { METRIC_COUNTER = 0, METRIC_GAUGE, METRIC_HISTOGRAM } metric_type_t;

/* Writes families whose samples are only known at scrape time. */
typedef void (*metrics_collect_fn)(metrics_out_t *o, void *arg);

typedef struct metrics_entry {
    const char *name, *help; /* borrowed: string literals */
    metric_type_t type;
    char labels[160];        /* rendered, "" for none */
    const uint64_t *u64;     /* a counter or gauge read from here, or */
    const int64_t *i64;      /* a gauge read from here, or */
    const double *dbl;       /* a gauge read from here, or */
    const metrics_hist_t *h; /* a histogram */
} metrics_entry_t;

typedef struct metrics_registry {
    metrics_entry_t *entries;
    size_t n, cap;
    struct {
        metrics_collect_fn fn;
        void *arg;
    } collectors[8];
    size_t n_collectors;
} metrics_registry_t;

void metrics_init(metrics_registry_t *r);
void metrics_free(metrics_registry_t *r);
/* Register one sample read from *value when scraped (value must outlive the registry).
 * Samples of one name share one HELP/TYPE header and must be registered one after the other.
 * labels: "" or rendered pairs. -1 when out of memory. */
int metrics_add_u64(metrics_registry_t *r, metric_type_t type, const char *name, const char *help,
                    const char *labels, const uint64_t *value) WARN_UNUSED;
int metrics_add_i64(metrics_registry_t *r, const char *name, const char *help, const char *labels,
                    const int64_t *value) WARN_UNUSED;
int metrics_add_double(metrics_registry_t *r, const char *name, const char *help,
                       const char *labels, const double *value) WARN_UNUSED;
int metrics_add_hist(metrics_registry_t *r, const char *name, const char *help, const char *labels,
                     const metrics_hist_t *h) WARN_UNUSED;
/* fn writes its own families after the registered ones. -1 when the table is full. */
int metrics_add_collector(metrics_registry_t *r, metrics_collect_fn fn, void *arg) WARN_UNUSED;
/* The whole exposition into o. */
void metrics_render(const metrics_registry_t *r, metrics_out_t *o);

#endif
