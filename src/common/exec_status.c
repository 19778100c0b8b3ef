/* The execution statuses' words and finality (warren/exec_status.h), for every module that reads
 * or prints a status; which status may follow which is the executor's (executor/transitions.c). */
#include <string.h>
#include "warren/exec_status.h"

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
