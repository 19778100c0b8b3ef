/* The worker daemon as the CLI starts it (src/worker/, docs/worker.md). */
#ifndef WARREN_WORKER_H
#define WARREN_WORKER_H

#include "warren/config.h"

/* Run worker `id` (valid: ids_worker_valid) with the settings in cfg (borrowed; SIGHUP
 * reloads it, reload.h) until stopped by a signal (or a fatal broker refusal). Tells a service
 * manager when it consumes its queue (notify.h). Returns the exit code: 0 after a clean
 * drain, 1 when work was abandoned or the worker could not start. */
int worker_run(warren_config_t *cfg, const char *id);

#endif
