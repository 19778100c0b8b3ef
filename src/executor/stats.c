/* The executor's counters and the periodic stats log line. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "executor/stats.h"
#include "warren/log.h"

void stats_dead_letter(executor_stats_t *s, const char *reason, uint64_t n)
{
    for (size_t i = 0; i < s->n_reasons; i++)
        if (!strcmp(s->dead_letters[i].reason, reason)) {
            s->dead_letters[i].count += n;
            return;
        }
    if (s->n_reasons == STATS_MAX_REASONS) {
        s->dead_letters_other += n;
        return;
    }
    snprintf(s->dead_letters[s->n_reasons].reason, sizeof s->dead_letters[0].reason, "%s", reason);
    s->dead_letters[s->n_reasons++].count = n;
}

uint64_t stats_dead_letters(const executor_stats_t *s, const char *reason)
{
    for (size_t i = 0; i < s->n_reasons; i++)
        if (!strcmp(s->dead_letters[i].reason, reason))
            return s->dead_letters[i].count;
    return 0;
}

void stats_merge(executor_stats_t *dst, const executor_stats_t *src)
{
#define STATS_ADD(name) dst->name += src->name;
    EXECUTOR_COUNTERS(STATS_ADD)
#undef STATS_ADD
    if (src->dead_letter_age_s > dst->dead_letter_age_s)
        dst->dead_letter_age_s = src->dead_letter_age_s;
    for (size_t i = 0; i < src->n_reasons; i++)
        stats_dead_letter(dst, src->dead_letters[i].reason, src->dead_letters[i].count);
    dst->dead_letters_other += src->dead_letters_other;
}

/* "expired=3,parse_error=1" */
static void reasons_text(const executor_stats_t *s, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n_reasons && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s=%" PRIu64, i ? "," : "",
                              s->dead_letters[i].reason, s->dead_letters[i].count);
    if (s->dead_letters_other && o < len)
        snprintf(buf + o, len - o, "%sother=%" PRIu64, o ? "," : "", s->dead_letters_other);
}

void stats_log(const executor_stats_t *s, breaker_state_t breaker, uint64_t db_errors)
{
    struct {
#define STATS_TEXT_FIELD(name) char name[24];
        EXECUTOR_COUNTERS(STATS_TEXT_FIELD)
#undef STATS_TEXT_FIELD
    } t;
    char db_t[24], age_t[24], reasons[512];
#define STATS_TEXT(name) snprintf(t.name, sizeof t.name, "%" PRIu64, s->name);
    EXECUTOR_COUNTERS(STATS_TEXT)
#undef STATS_TEXT
    snprintf(db_t, sizeof db_t, "%" PRIu64, db_errors);
    snprintf(age_t, sizeof age_t, "%" PRIu64, s->dead_letter_age_s);
    reasons_text(s, reasons, sizeof reasons);
#define STATS_KV(name) #name, t.name,
    log_kv(LOG_INFO, "stats", EXECUTOR_COUNTERS(STATS_KV) "dead_letters", reasons,
           "dead_letter_age_s", age_t, "db_errors", db_t, "breaker", breaker_state_name(breaker),
           NULL);
#undef STATS_KV
}
