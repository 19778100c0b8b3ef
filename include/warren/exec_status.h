/*
 * Execution statuses, as executions.status stores them: the one list. The transition table
 * (executor/transitions.c) is built on it, the CLI's status words come from it, and SQL text
 * names a status only through EXEC_SQL(NAME), which does not compile for a status that is not
 * here. The executions_status_check constraint and the final statuses of executions_ended_check
 * (schema 001) must say the same: tests/integration/schema_statuses.sh compares them.
 */
#ifndef WARREN_EXEC_STATUS_H
#define WARREN_EXEC_STATUS_H

#include "warren/common.h"

/* Each status's word, written once. */
#define EXEC_NAME_REQUESTED "requested"
#define EXEC_NAME_SCHEDULING "scheduling"
#define EXEC_NAME_SCHEDULED "scheduled"
#define EXEC_NAME_RUNNING "running"
#define EXEC_NAME_CANCELING "canceling"
#define EXEC_NAME_COMPLETED "completed"
#define EXEC_NAME_FAILED "failed"
#define EXEC_NAME_CANCELLED "cancelled"
#define EXEC_NAME_TIMEOUT "timeout"
#define EXEC_NAME_ABANDONED "abandoned"

/* X(NAME, final): every status, in order; a final (terminal) one never changes again. */
#define EXEC_STATUSES(X)                                                                           \
    X(REQUESTED, false)                                                                            \
    X(SCHEDULING, false)                                                                           \
    X(SCHEDULED, false)                                                                            \
    X(RUNNING, false)                                                                              \
    X(CANCELING, false)                                                                            \
    X(COMPLETED, true)                                                                             \
    X(FAILED, true)                                                                                \
    X(CANCELLED, true)                                                                             \
    X(TIMEOUT, true)                                                                               \
    X(ABANDONED, true)

/* clang-format off */
typedef enum {
#define EXEC_STATUS_ENUM(name, final) EXEC_##name,
    EXEC_STATUSES(EXEC_STATUS_ENUM)
#undef EXEC_STATUS_ENUM
    EXEC_STATUS_COUNT
} exec_status_t;
/* clang-format on */

/* The status as an SQL literal for statement text: EXEC_SQL(RUNNING) is "'running'". */
#define EXEC_SQL(name) "'" EXEC_NAME_##name "'"

/* The status as stored in executions.status ("unknown" for a value that is none). */
const char *trans_status_name(exec_status_t s);
/* Parse a stored status; -1 for text that is not one. */
int trans_status_parse(const char *s, exec_status_t *out) WARN_UNUSED;
/* Final: nothing moves an execution out of it. */
bool trans_is_terminal(exec_status_t s);

#endif
