/* Worker ids, action refs and execution ids as text: the rules (see warren/ids.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/ids.h"

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/*
 * A worker id is spliced into a queue name and into a topic routing key. '.' separates
 * routing-key words; that is harmless because the binding is the exact key, but empty
 * words (a trailing '.' or "..") make keys that read like mistakes, and '*' or '#' would
 * turn a key into a wildcard pattern. The character set keeps all of those out, plus
 * spaces, '/' (a URL path separator in the management API) and non-ASCII.
 */
bool ids_worker_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > WORKER_ID_MAX || strspn(id, ALNUM "_.-") != n)
        return false;
    return strchr("_.-", id[0]) == NULL && id[n - 1] != '.' && strstr(id, "..") == NULL;
}

bool ids_action_ref_valid(const char *ref)
{
    size_t n = ref ? strlen(ref) : 0;
    if (n == 0 || n > ACTION_REF_MAX || ref[0] == '.')
        return false;
    return strspn(ref, ALNUM "._-") == n;
}

bool ids_idempotency_key_valid(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > IDEMPOTENCY_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (key[i] < '!' || key[i] > '~')
            return false;
    return true;
}

/* n lowercase hex digits at s, not all '0'. */
static bool lower_hex(const char *s, size_t n)
{
    bool nonzero = false;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
        nonzero = nonzero || s[i] != '0';
    }
    return nonzero;
}

bool ids_traceparent_valid(const char *tp)
{
    return tp && strlen(tp) == IDS_TRACEPARENT_LEN && !strncmp(tp, "00-", 3) && tp[35] == '-' &&
           tp[52] == '-' && lower_hex(tp + 3, 32) && lower_hex(tp + 36, 16) &&
           (lower_hex(tp + 53, 2) || !strcmp(tp + 53, "00"));
}

int ids_execution_id_parse(const char *s, size_t len, int64_t *out)
{
    /* 18 digits always fit an int64_t; the ids a database hands out are far smaller. */
    if (len == 0 || len > 18 || s[0] == '0' || strspn(s, "0123456789") != len)
        return -1;
    *out = strtoll(s, NULL, 10);
    return 0;
}

void ids_execution_id_text(int64_t id, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64, id);
}

bool ids_incarnation_valid(const char *s)
{
    return s && strlen(s) == INCARNATION_LEN && strspn(s, "0123456789abcdef") == INCARNATION_LEN;
}
