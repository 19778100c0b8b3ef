/* Broker topology: names derived from worker ids, declarations, and the drift report. */
#include <stdio.h>
#include <string.h>
#include "warren/topology.h"

/*
 * A worker id is spliced into a queue name and into a topic routing key. '.' separates
 * routing-key words; that is harmless because the binding is the exact key, but empty
 * words (a trailing '.' or "..") make keys that read like mistakes, and '*' or '#' would
 * turn a key into a wildcard pattern. The character set keeps all of those out, plus
 * spaces, '/' (a URL path separator in the management API) and non-ASCII.
 */
bool topo_worker_id_valid(const char *id)
{
    static const char allowed[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
    if (!id)
        return false;
    size_t n = strlen(id);
    if (n == 0 || n > WORKER_ID_MAX || strspn(id, allowed) != n)
        return false;
    bool alnum_first = strchr("_.-", id[0]) == NULL;
    return alnum_first && id[n - 1] != '.' && strstr(id, "..") == NULL;
}

static int format_name(char *buf, size_t len, const char *prefix, const char *worker_id,
                       const char *suffix)
{
    if (!topo_worker_id_valid(worker_id))
        return -1;
    int n = snprintf(buf, len, "%s%s%s", prefix, worker_id, suffix);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

int topo_worker_queue(const char *worker_id, char *buf, size_t len)
{
    return format_name(buf, len, "worker.", worker_id, ".executions");
}

int topo_dispatch_key(const char *worker_id, char *buf, size_t len)
{
    return format_name(buf, len, "execution.dispatch.worker.", worker_id, "");
}
