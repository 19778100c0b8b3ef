/*
 * Test-only fault injection for the executor: WARREN_FAULT names one fault, read once at
 * start-up; unset (always, outside tests) nothing here does anything. The faults, and the tests
 * that use them (docs/development.md):
 *   exit_after_commit  SIGKILL right after the first COMMIT that scheduled dispatches
 *                      (executor_unconfirmed.sh)
 *   hold_oom_once      each consumer fails to hold its first delivery as if out of memory
 *                      (executor_oom_nack.sh)
 */
#ifndef WARREN_EXECUTOR_FAULT_H
#define WARREN_EXECUTOR_FAULT_H

#include "warren/common.h"

/* Is `name` the fault WARREN_FAULT asks for? */
bool fault_armed(const char *name);

#endif
