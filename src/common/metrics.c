/* The metrics registry and the Prometheus text format (see warren/metrics.h). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "warren/metrics.h"

const double metrics_seconds_bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                         2.5,   5,     10,   30,   60,  120,  300, 600};
const size_t metrics_seconds_bounds_len = sizeof metrics_seconds_bounds /
                                          sizeof metrics_seconds_bounds[0];
const double metrics_fast_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                      0.25,  0.5,    1,     2.5,  5,     10};
const size_t metrics_fast_bounds_len = sizeof metrics_fast_bounds / sizeof metrics_fast_bounds[0];

void metrics_hist_init(metrics_hist_t *h, const double *bounds, size_t n_bounds)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n_bounds = n_bounds < METRICS_HIST_MAX_BUCKETS ? n_bounds : METRICS_HIST_MAX_BUCKETS;
}

void metrics_hist_observe(metrics_hist_t *h, double value)
{
    if (isnan(value))
        return;
    for (size_t i = 0; i < h->n_bounds; i++)
        if (value <= h->bounds[i]) {
            h->buckets[i]++;
            break;
        }
    h->count++;
    h->sum += value;
}

void metrics_hist_merge(metrics_hist_t *dst, const metrics_hist_t *src)
{
    if (!dst->bounds) /* a zeroed histogram takes the other's bounds */
        metrics_hist_init(dst, src->bounds, src->n_bounds);
    for (size_t i = 0; i < dst->n_bounds && i < src->n_bounds; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
}

/* ---- output ---- */

void metrics_out_init(metrics_out_t *o)
{
    memset(o, 0, sizeof *o);
}

void metrics_out_free(metrics_out_t *o)
{
    free(o->buf);
    memset(o, 0, sizeof *o);
}

static void out_printf(metrics_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(metrics_out_t *o, const char *fmt, ...)
{
    if (o->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = o->cap - o->len;
        int n = vsnprintf(o->buf ? o->buf + o->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->failed = true;
            return;
        }
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap ? o->cap * 2 : 4096;
        while (cap - o->len <= (size_t)n)
            cap *= 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->failed = true;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
}

void metrics_family(metrics_out_t *o, const char *name, const char *type, const char *help)
{
    out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Prometheus floats: integers without a fraction, +Inf/-Inf/NaN spelled its way. */
static void format_value(double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "NaN");
    else if (isinf(v))
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.15g", v);
}

static void sample_text(metrics_out_t *o, const char *name, const char *suffix, const char *labels,
                        const char *value)
{
    if (labels && *labels)
        out_printf(o, "%s%s{%s} %s\n", name, suffix, labels, value);
    else
        out_printf(o, "%s%s %s\n", name, suffix, value);
}

void metrics_sample(metrics_out_t *o, const char *name, const char *labels, double value)
{
    char v[64];
    format_value(value, v, sizeof v);
    sample_text(o, name, "", labels, v);
}

void metrics_sample_u64(metrics_out_t *o, const char *name, const char *labels, uint64_t value)
{
    char v[32];
    snprintf(v, sizeof v, "%" PRIu64, value);
    sample_text(o, name, "", labels, v);
}

void metrics_sample_hist(metrics_out_t *o, const char *name, const char *labels,
                         const metrics_hist_t *h)
{
    uint64_t cumulative = 0;
    char le[64], lab[400], v[64];
    for (size_t i = 0; i <= h->n_bounds; i++) {
        if (i < h->n_bounds) {
            cumulative += h->buckets[i];
            format_value(h->bounds[i], le, sizeof le);
        } else {
            cumulative = h->count;
            snprintf(le, sizeof le, "+Inf");
        }
        snprintf(lab, sizeof lab, "%s", labels ? labels : "");
        if (metrics_label(lab, sizeof lab, "le", le) != 0)
            continue;
        snprintf(v, sizeof v, "%" PRIu64, cumulative);
        sample_text(o, name, "_bucket", lab, v);
    }
    format_value(h->sum, v, sizeof v);
    sample_text(o, name, "_sum", labels, v);
    snprintf(v, sizeof v, "%" PRIu64, h->count);
    sample_text(o, name, "_count", labels, v);
}

#define LABEL_VALUE_MAX 128

int metrics_label(char *labels, size_t len, const char *key, const char *value)
{
    size_t o = strlen(labels);
    char esc[2 * LABEL_VALUE_MAX + 1];
    size_t e = 0;
    for (size_t i = 0; value[i] && i < LABEL_VALUE_MAX; i++) {
        char c = value[i];
        if (c == '\\' || c == '"' || c == '\n') {
            esc[e++] = '\\';
            c = (char)(c == '\n' ? 'n' : c);
        }
        esc[e++] = c;
    }
    esc[e] = '\0';
    int n = snprintf(labels + o, len - o, "%s%s=\"%s\"", o ? "," : "", key, esc);
    if (n < 0 || (size_t)n >= len - o) {
        labels[o] = '\0';
        return -1;
    }
    return 0;
}

/* ---- registry ---- */

void metrics_init(metrics_registry_t *r)
{
    memset(r, 0, sizeof *r);
}

void metrics_free(metrics_registry_t *r)
{
    free(r->entries);
    memset(r, 0, sizeof *r);
}

static metrics_entry_t *add(metrics_registry_t *r, metric_type_t type, const char *name,
                            const char *help, const char *labels)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 32;
        metrics_entry_t *e = realloc(r->entries, cap * sizeof *e);
        if (!e)
            return NULL;
        r->entries = e;
        r->cap = cap;
    }
    metrics_entry_t *e = &r->entries[r->n++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->help = help;
    e->type = type;
    snprintf(e->labels, sizeof e->labels, "%s", labels ? labels : "");
    return e;
}

int metrics_add_u64(metrics_registry_t *r, metric_type_t type, const char *name, const char *help,
                    const char *labels, const uint64_t *value)
{
    metrics_entry_t *e = add(r, type, name, help, labels);
    return e ? (e->u64 = value, 0) : -1;
}

int metrics_add_i64(metrics_registry_t *r, const char *name, const char *help, const char *labels,
                    const int64_t *value)
{
    metrics_entry_t *e = add(r, METRIC_GAUGE, name, help, labels);
    return e ? (e->i64 = value, 0) : -1;
}

int metrics_add_double(metrics_registry_t *r, const char *name, const char *help,
                       const char *labels, const double *value)
{
    metrics_entry_t *e = add(r, METRIC_GAUGE, name, help, labels);
    return e ? (e->dbl = value, 0) : -1;
}

int metrics_add_hist(metrics_registry_t *r, const char *name, const char *help, const char *labels,
                     const metrics_hist_t *h)
{
    metrics_entry_t *e = add(r, METRIC_HISTOGRAM, name, help, labels);
    return e ? (e->h = h, 0) : -1;
}

int metrics_add_collector(metrics_registry_t *r, metrics_collect_fn fn, void *arg)
{
    size_t max = sizeof r->collectors / sizeof r->collectors[0];
    if (r->n_collectors == max)
        return -1;
    r->collectors[r->n_collectors].fn = fn;
    r->collectors[r->n_collectors++].arg = arg;
    return 0;
}

void metrics_render(const metrics_registry_t *r, metrics_out_t *o)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    for (size_t i = 0; i < r->n; i++) {
        const metrics_entry_t *e = &r->entries[i];
        if (i == 0 || strcmp(r->entries[i - 1].name, e->name))
            metrics_family(o, e->name, types[e->type], e->help);
        if (e->h)
            metrics_sample_hist(o, e->name, e->labels, e->h);
        else if (e->u64)
            metrics_sample_u64(o, e->name, e->labels, *e->u64);
        else if (e->i64)
            metrics_sample(o, e->name, e->labels, (double)*e->i64);
        else if (e->dbl)
            metrics_sample(o, e->name, e->labels, *e->dbl);
    }
    for (size_t i = 0; i < r->n_collectors; i++)
        r->collectors[i].fn(o, r->collectors[i].arg);
}
