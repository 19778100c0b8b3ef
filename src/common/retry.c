/* Retry policies: their text forms and the decision (warren/retry.h, docs/retries.md). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/retry.h"

#define ACTION_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define TYPE_CHARS ACTION_CHARS

static const char *const outcome_names[OUTCOME_COUNT] = {
    [OUTCOME_COMPLETED] = "completed",     [OUTCOME_TEMPFAIL] = "tempfail",
    [OUTCOME_FAILED] = "failed",           [OUTCOME_TIMEOUT] = "timeout",
    [OUTCOME_WORKER_LOST] = "worker_lost", [OUTCOME_CANCELLED] = "cancelled"};

static const struct {
    const char *word;
    unsigned bit;
} retry_on_words[] = {{"tempfail", RETRY_ON_TEMPFAIL},
                      {"failed", RETRY_ON_FAILED},
                      {"timeout", RETRY_ON_TIMEOUT},
                      {"worker_lost", RETRY_ON_WORKER_LOST}};
#define N_WORDS (sizeof retry_on_words / sizeof retry_on_words[0])

const char *const retry_policy_fields[] = {"max_attempts", "backoff",     "base_ms",
                                           "factor",       "max_ms",      "jitter",
                                           "retry_on",     "never_retry", NULL};

void retry_policy_default(retry_policy_t *p)
{
    memset(p, 0, sizeof *p);
    p->max_attempts = 1;
    p->backoff = BACKOFF_EXPONENTIAL;
    p->base_ms = 1000;
    p->factor = 2;
    p->max_ms = 3600000;
    p->jitter = JITTER_FULL;
    p->retry_on = RETRY_ON_TEMPFAIL | RETRY_ON_WORKER_LOST;
}

const char *retry_outcome_name(attempt_outcome_t o)
{
    return (unsigned)o < OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

static int fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

int retry_on_parse(const char *list, unsigned *bits, char *why, size_t whylen)
{
    *bits = 0;
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, ",");
        size_t lead = strspn(s, " "), w = n - lead;
        while (w > 0 && s[lead + w - 1] == ' ')
            w--;
        bool known = false;
        for (size_t i = 0; i < N_WORDS && !known; i++)
            if (strlen(retry_on_words[i].word) == w &&
                !strncmp(s + lead, retry_on_words[i].word, w)) {
                *bits |= retry_on_words[i].bit;
                known = true;
            }
        if (!known)
            return fail(why, whylen,
                        "'%.*s' is not a retry_on word (tempfail, failed, timeout, worker_lost)",
                        (int)(w > 64 ? 64 : w), s + lead);
        s += n + (s[n] == ',');
    }
    if (*bits == 0)
        return fail(why, whylen,
                    "an empty list: name at least one of tempfail, failed, timeout, "
                    "worker_lost (max_attempts = 1 turns retries off)");
    return 0;
}

void retry_on_text(unsigned bits, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_WORDS && o < len; i++)
        if (bits & retry_on_words[i].bit)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", retry_on_words[i].word);
}

int retry_on_check(const char *list, char *why, size_t whylen)
{
    unsigned bits;
    return retry_on_parse(list, &bits, why, whylen);
}

int retry_jitter_parse(const char *spec, retry_policy_t *p, char *why, size_t whylen)
{
    if (!strcmp(spec, "full")) {
        p->jitter = JITTER_FULL;
        return 0;
    }
    if (!strcmp(spec, "none")) {
        p->jitter = JITTER_NONE;
        return 0;
    }
    size_t n = strspn(spec, "0123456789");
    if (n >= 1 && n <= 3 && !strcmp(spec + n, "%")) {
        int pct = atoi(spec);
        if (pct >= 1 && pct <= 100) {
            p->jitter = JITTER_PERCENT;
            p->jitter_pct = pct;
            return 0;
        }
    }
    return fail(why, whylen, "'%.32s' is not full, none or N%% (1..100: the delay +- N%%)", spec);
}

int retry_jitter_check(const char *spec, char *why, size_t whylen)
{
    retry_policy_t p;
    return retry_jitter_parse(spec, &p, why, whylen);
}

int retry_never_check(const char *list, char *why, size_t whylen)
{
    if (strlen(list) >= RETRY_NEVER_MAX)
        return fail(why, whylen, "longer than %d characters", RETRY_NEVER_MAX - 1);
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n > 63 || strspn(s, TYPE_CHARS) < n)
            return fail(why, whylen,
                        "'%.*s' is not an error type (letters, digits, '._-', at most 63)",
                        (int)(n > 64 ? 64 : n), s);
        s += n + (s[n] == ',');
    }
    return 0;
}

/* A whole number in [lo, hi] from text; -1 with why. */
static int number(const char *field, const char *v, long long lo, long long hi, long long *out,
                  char *why, size_t whylen)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end)
        return fail(why, whylen, "%s: expected an integer, got '%.32s'", field, v);
    if (x < lo || x > hi)
        return fail(why, whylen, "%s: %lld is out of bounds [%lld, %lld]", field, x, lo, hi);
    *out = x;
    return 0;
}

int retry_policy_set(retry_policy_t *p, const char *field, const char *value, char *why,
                     size_t whylen)
{
    /* number() sets x when it returns 0; clang-tidy cannot see that fail() (variadic) is -1 */
    long long x = 0;
    if (!strcmp(field, "max_attempts")) {
        if (number(field, value, 1, RETRY_MAX_ATTEMPTS, &x, why, whylen))
            return -1;
        p->max_attempts = (int)x;
    } else if (!strcmp(field, "backoff")) {
        if (!strcmp(value, "exponential"))
            p->backoff = BACKOFF_EXPONENTIAL;
        else if (!strcmp(value, "polynomial"))
            p->backoff = BACKOFF_POLYNOMIAL;
        else
            return fail(why, whylen, "backoff: expected exponential or polynomial, got '%.32s'",
                        value);
    } else if (!strcmp(field, "base_ms")) {
        if (number(field, value, 1, RETRY_MAX_DELAY_MS, &x, why, whylen))
            return -1;
        p->base_ms = x;
    } else if (!strcmp(field, "factor")) {
        if (number(field, value, 1, 100, &x, why, whylen))
            return -1;
        p->factor = (int)x;
    } else if (!strcmp(field, "max_ms")) {
        if (number(field, value, 1, RETRY_MAX_DELAY_MS, &x, why, whylen))
            return -1;
        p->max_ms = x;
    } else if (!strcmp(field, "jitter")) {
        char w[200];
        if (retry_jitter_parse(value, p, w, sizeof w))
            return fail(why, whylen, "jitter: %s", w);
    } else if (!strcmp(field, "retry_on")) {
        char w[200];
        if (retry_on_parse(value, &p->retry_on, w, sizeof w))
            return fail(why, whylen, "retry_on: %s", w);
    } else if (!strcmp(field, "never_retry")) {
        char w[200];
        if (retry_never_check(value, w, sizeof w))
            return fail(why, whylen, "never_retry: %s", w);
        snprintf(p->never, sizeof p->never, "%s", value);
    } else if (!strcmp(field, "queue_timeout_s")) {
        if (number(field, value, 0, QUEUE_TIMEOUT_MAX_S, &x, why, whylen))
            return -1;
        p->queue_timeout_s = (int)x;
    } else {
        return fail(why, whylen,
                    "unknown field '%.32s' (max_attempts, backoff, base_ms, factor, max_ms, "
                    "jitter, retry_on, never_retry, queue_timeout_s)",
                    field);
    }
    return 0;
}

void retry_policy_text(const retry_policy_t *p, char *buf, size_t len)
{
    char on[64], jitter[16];
    retry_on_text(p->retry_on, on, sizeof on);
    if (p->jitter == JITTER_PERCENT)
        snprintf(jitter, sizeof jitter, "%d%%", p->jitter_pct);
    else
        snprintf(jitter, sizeof jitter, "%s", p->jitter == JITTER_FULL ? "full" : "none");
    snprintf(buf, len,
             "max_attempts=%d backoff=%s base_ms=%lld factor=%d max_ms=%lld jitter=%s "
             "retry_on=%s never_retry=%s",
             p->max_attempts, p->backoff == BACKOFF_POLYNOMIAL ? "polynomial" : "exponential",
             (long long)p->base_ms, p->factor, (long long)p->max_ms, jitter, on, p->never);
}

/* ---- the key `actions` ----------------------------------------------------------------------- */

/* One entry [s, end): "ACTION: field=value ..."; applies its fields to p when p is not NULL.
 * *name and *name_len get the action. -1 with why when malformed. */
static int parse_entry(const char *s, const char *end, const char **name, size_t *name_len,
                       retry_policy_t *p, char *why, size_t whylen)
{
    s += strspn(s, " \t\n");
    const char *colon = memchr(s, ':', (size_t)(end - s));
    if (!colon)
        return fail(why, whylen, "entry '%.*s' is not 'ACTION: field=value ...'",
                    (int)(end - s > 64 ? 64 : end - s), s);
    size_t n = (size_t)(colon - s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || n > 255 || *s == '.' || strspn(s, ACTION_CHARS) < n)
        return fail(why, whylen, "'%.*s' is not an action name (letters, digits, '._-')",
                    (int)(n > 64 ? 64 : n), s);
    *name = s;
    *name_len = n;
    retry_policy_t scratch;
    retry_policy_default(&scratch);
    if (!p)
        p = &scratch;
    for (const char *f = colon + 1; f < end;) {
        f += strspn(f, " \t\n");
        if (f >= end)
            break;
        size_t fl = strcspn(f, " \t\n;");
        if (f + fl > end)
            fl = (size_t)(end - f);
        char item[600], w[300];
        if (fl >= sizeof item)
            return fail(why, whylen, "%.*s: a field longer than %zu characters", (int)n, s,
                        sizeof item - 1);
        memcpy(item, f, fl);
        item[fl] = '\0';
        char *eq = strchr(item, '=');
        if (!eq)
            return fail(why, whylen, "%.*s: '%.64s' is not field=value", (int)n, s, item);
        *eq = '\0';
        if (retry_policy_set(p, item, eq + 1, w, sizeof w))
            return fail(why, whylen, "%.*s: %s", (int)n, s, w);
        f += fl;
    }
    return 0;
}

/* Every entry of a spec in order: checked, then visit (when not NULL) with its text and action
 * name; -1 with why at the first malformed entry or when visit says -1. */
typedef int (*entry_fn)(const char *s, const char *end, const char *name, size_t n, void *arg);

static int walk(const char *spec, entry_fn visit, void *arg, char *why, size_t whylen)
{
    for (const char *s = spec ? spec : ""; *s;) {
        const char *end = strchr(s, ';');
        if (!end)
            end = s + strlen(s);
        const char *name;
        size_t n;
        /* parse_entry() sets name and n when it returns 0; clang-tidy cannot see that its fail()
         * (variadic) returns -1. NOLINTBEGIN(clang-analyzer-core.CallAndMessage) */
        if (end > s + strspn(s, " \t\n") && (parse_entry(s, end, &name, &n, NULL, why, whylen) ||
                                             (visit && visit(s, end, name, n, arg))))
            return -1;
        /* NOLINTEND(clang-analyzer-core.CallAndMessage) */
        s = *end ? end + 1 : end;
    }
    return 0;
}

int retry_actions_check(const char *spec, char *why, size_t whylen)
{
    return walk(spec, NULL, NULL, why, whylen);
}

typedef struct each_ctx {
    void (*fn)(const char *action, size_t len, void *arg);
    void *arg;
} each_ctx_t;

static int each_visit(const char *s, const char *end, const char *name, size_t n, void *arg)
{
    (void)s;
    (void)end;
    each_ctx_t *c = arg;
    c->fn(name, n, c->arg);
    return 0;
}

void retry_actions_each(const char *spec, void (*fn)(const char *action, size_t len, void *arg),
                        void *arg)
{
    char why[256];
    each_ctx_t c = {fn, arg};
    (void)walk(spec, each_visit, &c, why, sizeof why);
}

typedef struct for_ctx {
    const char *action;
    retry_policy_t *out;
} for_ctx_t;

static int for_visit(const char *s, const char *end, const char *name, size_t n, void *arg)
{
    for_ctx_t *c = arg;
    char why[256];
    if (n != strlen(c->action) || strncmp(name, c->action, n) != 0)
        return 0;
    return parse_entry(s, end, &name, &n, c->out, why, sizeof why);
}

int retry_policy_for(const char *spec, const char *action, const retry_policy_t *dflt,
                     retry_policy_t *out)
{
    char why[256];
    *out = *dflt;
    for_ctx_t c = {action, out};
    return walk(spec, for_visit, &c, why, sizeof why);
}

/* ---- the decision ---------------------------------------------------------------------------- */

int64_t retry_base_delay_ms(const retry_policy_t *p, int attempt)
{
    if (attempt < 1)
        attempt = 1;
    int64_t d;
    if (p->backoff == BACKOFF_POLYNOMIAL) {
        if (attempt > 1000)
            return p->max_ms;
        int64_t a = attempt;
        d = a * a * a * a * 1000; /* 1000^4 * 1000 fits in 64 bits */
    } else {
        d = p->base_ms;
        for (int i = 1; i < attempt && d < p->max_ms; i++)
            d = d > p->max_ms / (p->factor ? p->factor : 1) ? p->max_ms : d * p->factor;
    }
    return d < p->max_ms ? d : p->max_ms;
}

int64_t retry_jittered_ms(const retry_policy_t *p, int64_t d, double u)
{
    if (u < 0 || u != u)
        u = 0;
    if (u >= 1)
        u = 0.999999999;
    switch (p->jitter) {
    case JITTER_FULL: return (int64_t)((double)d * u + 0.5);
    case JITTER_PERCENT: {
        double span = (double)d * p->jitter_pct / 100.0;
        int64_t v = (int64_t)((double)d - span + 2 * span * u + 0.5);
        return v < 0 ? 0 : v;
    }
    default: return d;
    }
}

/* True when type is one of the comma-separated words of list. */
static bool listed(const char *list, const char *type)
{
    size_t want = strlen(type);
    if (want == 0)
        return false;
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, ",");
        if (n == want && !strncmp(s, type, n))
            return true;
        s += n + (s[n] == ',');
    }
    return false;
}

static bool retryable(unsigned on, attempt_outcome_t o)
{
    switch (o) {
    case OUTCOME_TEMPFAIL: return (on & (RETRY_ON_TEMPFAIL | RETRY_ON_FAILED)) != 0;
    case OUTCOME_FAILED: return (on & RETRY_ON_FAILED) != 0;
    case OUTCOME_TIMEOUT: return (on & RETRY_ON_TIMEOUT) != 0;
    case OUTCOME_WORKER_LOST: return (on & RETRY_ON_WORKER_LOST) != 0;
    default: return false;
    }
}

const char *retry_verdict_name(retry_verdict_t v)
{
    static const char *const names[] = {"none",        "retry",     "not_retryable",
                                        "never_retry", "exhausted", "cancelled"};
    return (unsigned)v < sizeof names / sizeof names[0] ? names[v] : "unknown";
}

retry_decision_t retry_decide(const retry_policy_t *p, int policy_attempt, attempt_outcome_t o,
                              const char *error_type, double (*unit_random)(void *), void *ctx)
{
    retry_decision_t d = {RETRY_NO_FAILURE, 0};
    if (o == OUTCOME_COMPLETED)
        return d;
    if (o == OUTCOME_CANCELLED) {
        d.verdict = RETRY_CANCELLED;
        return d;
    }
    if (!retryable(p->retry_on, o) || p->max_attempts <= 1) {
        d.verdict = RETRY_NOT_RETRYABLE;
        return d;
    }
    if (error_type && listed(p->never, error_type)) {
        d.verdict = RETRY_NEVER;
        return d;
    }
    if (policy_attempt >= p->max_attempts) {
        d.verdict = RETRY_EXHAUSTED;
        return d;
    }
    d.verdict = RETRY_AGAIN;
    d.delay_ms = retry_jittered_ms(p, retry_base_delay_ms(p, policy_attempt),
                                   unit_random ? unit_random(ctx) : 0.5);
    return d;
}

void retry_error_type(const char *error, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!error)
        return;
    size_t n = strspn(error, TYPE_CHARS);
    if (n == 0 || n > 63 || error[n] != ':' || n >= len)
        return;
    memcpy(buf, error, n);
    buf[n] = '\0';
}
