/* The executor daemon as the CLI starts it (src/executor/, docs/executor.md). */
#ifndef WARREN_EXECUTOR_H
#define WARREN_EXECUTOR_H

#include "warren/config.h"

/* Run until SIGTERM/SIGINT (drain, exit 0) or SIGQUIT; SIGHUP reloads cfg (reload.h), which is
 * borrowed and must outlive the call. Tells a service manager when it is ready (notify.h).
 * Returns an exit code. */
int executor_run(warren_config_t *cfg);

#endif
