/* Test-only fault injection (fault.h): which fault WARREN_FAULT names, if any. */
#include <stdlib.h>
#include <string.h>
#include "executor/fault.h"

bool fault_armed(const char *name)
{
    const char *fault = getenv("WARREN_FAULT");
    return fault && !strcmp(fault, name);
}
