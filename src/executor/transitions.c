/* The execution state machine as a table: which status may follow which (see transitions.h);
 * the statuses themselves are listed in warren/exec_status.h. */
#include <stdio.h>
#include <string.h>
#include "executor/transitions.h"

static const char *const names[EXEC_STATUS_COUNT] = {
#define EXEC_STATUS_NAME(name, final) [EXEC_##name] = EXEC_NAME_##name,
    EXEC_STATUSES(EXEC_STATUS_NAME)
#undef EXEC_STATUS_NAME
};

static const bool terminal[EXEC_STATUS_COUNT] = {
#define EXEC_STATUS_FINAL(name, final) [EXEC_##name] = (final),
    EXEC_STATUSES(EXEC_STATUS_FINAL)
#undef EXEC_STATUS_FINAL
};

#define TO(s) (1u << (s))

/*
 * successors[from] is the set of statuses `from` may move to. Why each edge exists:
 * requested  -> scheduling/scheduled (claimed), cancelled (operator), failed (cannot run);
 * scheduling -> scheduled, requested (a crashed claim is handed back);
 * scheduled  -> running (worker started), requested (publish not confirmed), failed
 *               (dead-lettered, never picked up, or the handler failed before its running
 *               status was sent), completed/timeout (a handler that finished before its
 *               running status went out: the worker sends only the completion), canceling,
 *               cancelled;
 * running    -> completed/failed/timeout (worker result), canceling, abandoned (worker died);
 * canceling  -> cancelled, or whatever the handler finished with first, or abandoned;
 * abandoned  -> completed/failed/timeout: the worker was only out of sight (the executor's own
 *               broker outage, a slow report) and finished the same attempt after all; the
 *               attempt fence keeps any other attempt out, and the history notes it.
 * failed, timeout, abandoned -> requested: a retry (docs/retries.md), decided by the retry policy
 *               in the transaction that ended the attempt, or asked for with `warren retry`; the
 *               next dispatch is the next attempt.
 * completed and cancelled have no successors: nothing moves them.
 */
static const unsigned successors[EXEC_STATUS_COUNT] = {
    [EXEC_REQUESTED] = TO(EXEC_SCHEDULING) | TO(EXEC_SCHEDULED) | TO(EXEC_CANCELLED) |
                       TO(EXEC_FAILED),
    [EXEC_SCHEDULING] = TO(EXEC_SCHEDULED) | TO(EXEC_REQUESTED),
    [EXEC_SCHEDULED] = TO(EXEC_RUNNING) | TO(EXEC_REQUESTED) | TO(EXEC_FAILED) |
                       TO(EXEC_COMPLETED) | TO(EXEC_TIMEOUT) | TO(EXEC_CANCELING) |
                       TO(EXEC_CANCELLED),
    [EXEC_RUNNING] = TO(EXEC_COMPLETED) | TO(EXEC_FAILED) | TO(EXEC_TIMEOUT) | TO(EXEC_CANCELING) |
                     TO(EXEC_ABANDONED),
    [EXEC_CANCELING] = TO(EXEC_CANCELLED) | TO(EXEC_COMPLETED) | TO(EXEC_FAILED) |
                       TO(EXEC_TIMEOUT) | TO(EXEC_ABANDONED),
    [EXEC_ABANDONED] = TO(EXEC_COMPLETED) | TO(EXEC_FAILED) | TO(EXEC_TIMEOUT) | TO(EXEC_REQUESTED),
    [EXEC_FAILED] = TO(EXEC_REQUESTED),
    [EXEC_TIMEOUT] = TO(EXEC_REQUESTED),
};

const char *trans_status_name(exec_status_t s)
{
    return (unsigned)s < EXEC_STATUS_COUNT ? names[s] : "unknown";
}

int trans_status_parse(const char *s, exec_status_t *out)
{
    for (int i = 0; s && i < EXEC_STATUS_COUNT; i++)
        if (!strcmp(s, names[i])) {
            *out = (exec_status_t)i;
            return 0;
        }
    return -1;
}

bool trans_is_terminal(exec_status_t s)
{
    return (unsigned)s < EXEC_STATUS_COUNT && terminal[s];
}

bool trans_legal(exec_status_t from, exec_status_t to)
{
    if ((unsigned)from >= EXEC_STATUS_COUNT || (unsigned)to >= EXEC_STATUS_COUNT)
        return false;
    return (successors[from] & TO(to)) != 0;
}

/* Append ",word" (or "word" first) to buf at *o; false when it does not fit. */
static bool append_word(char *buf, size_t len, size_t *o, const char *word)
{
    int n = snprintf(buf + *o, len - *o, "%s%s", *o > 1 ? "," : "", word);
    if (n < 0 || (size_t)n >= len - *o)
        return false;
    *o += (size_t)n;
    return true;
}

static bool close_literal(char *buf, size_t len, size_t *o)
{
    if (*o + 2 > len)
        return false;
    buf[(*o)++] = '}';
    buf[*o] = '\0';
    return true;
}

int trans_sources_literal(exec_status_t to, char *buf, size_t len)
{
    size_t o = 0;
    if (len < 3)
        return -1;
    buf[o++] = '{';
    for (int from = 0; from < EXEC_STATUS_COUNT; from++)
        if (trans_legal((exec_status_t)from, to) && !append_word(buf, len, &o, names[from]))
            return -1;
    return close_literal(buf, len, &o) ? 0 : -1;
}

int trans_pairs_literal(const exec_status_t *targets, size_t n, char *from_buf, char *to_buf,
                        size_t len)
{
    size_t of = 0, ot = 0;
    if (len < 3)
        return -1;
    from_buf[of++] = '{';
    to_buf[ot++] = '{';
    for (size_t t = 0; t < n; t++)
        for (int from = 0; from < EXEC_STATUS_COUNT; from++) {
            if (!trans_legal((exec_status_t)from, targets[t]))
                continue;
            if (!append_word(from_buf, len, &of, names[from]) ||
                !append_word(to_buf, len, &ot, names[targets[t]]))
                return -1;
        }
    return close_literal(from_buf, len, &of) && close_literal(to_buf, len, &ot) ? 0 : -1;
}
