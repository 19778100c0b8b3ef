/* Per-action default timeouts: parsing and lookup of "action=seconds,..." specs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/action_timeouts.h"

#define ACTION_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* One entry [s, end): action name length into *name_len and its seconds; -1 when malformed. */
static int parse_entry(const char *s, const char *end, size_t *name_len, long *seconds)
{
    const char *eq = memchr(s, '=', (size_t)(end - s));
    if (!eq || eq == s || *s == '.')
        return -1;
    *name_len = (size_t)(eq - s);
    for (const char *p = s; p < eq; p++)
        if (!strchr(ACTION_CHARS, *p))
            return -1;
    char digits[16];
    size_t n = (size_t)(end - eq - 1);
    if (n == 0 || n >= sizeof digits || strspn(eq + 1, "0123456789") < n)
        return -1;
    memcpy(digits, eq + 1, n);
    digits[n] = '\0';
    *seconds = strtol(digits, NULL, 10);
    return *seconds >= 1 && *seconds <= ACTION_TIMEOUT_MAX_S ? 0 : -1;
}

int action_timeouts_check(const char *spec, char *why, size_t whylen)
{
    for (const char *s = spec; *s;) {
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        size_t name_len;
        long seconds;
        if (parse_entry(s, end, &name_len, &seconds) != 0) {
            snprintf(why, whylen,
                     "entry '%.*s' is not action=seconds (action: letters, digits, '._-'; "
                     "seconds: 1 .. %d)",
                     (int)(end - s), s, ACTION_TIMEOUT_MAX_S);
            return -1;
        }
        s = *end ? end + 1 : end;
    }
    return 0;
}

typedef struct lookup {
    const char *action;
    int seconds;
} lookup_t;

static void lookup_one(const char *action, size_t len, int seconds, void *arg)
{
    lookup_t *l = arg;
    if (!l->seconds && len == strlen(l->action) && !strncmp(action, l->action, len))
        l->seconds = seconds;
}

int action_timeouts_lookup(const char *spec, const char *action)
{
    lookup_t l = {action, 0};
    action_timeouts_each(spec, lookup_one, &l);
    return l.seconds;
}

void action_timeouts_each(const char *spec,
                          void (*fn)(const char *action, size_t len, int seconds, void *arg),
                          void *arg)
{
    for (const char *s = spec ? spec : ""; *s;) {
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        size_t name_len;
        long seconds;
        if (parse_entry(s, end, &name_len, &seconds) == 0)
            fn(s, name_len, (int)seconds, arg);
        s = *end ? end + 1 : end;
    }
}
