/* The executor daemon as the CLI starts it (src/executor/, docs/executor.md). */
#ifndef WARREN_EXECUTOR_H
#define WARREN_EXECUTOR_H

#include "warren/config.h"

/* Run until SIGTERM/SIGINT (drain, exit 0) or SIGQUIT. cfg is borrowed. Returns an exit code. */
int executor_run(const warren_config_t *cfg);

#endif
