/*
 * The worker daemon as the CLI starts it (src/worker/, docs/worker.md), and the rule for the
 * action refs its handlers directory can serve, which `warren submit` checks too.
 */
#ifndef WARREN_WORKER_H
#define WARREN_WORKER_H

#include "warren/config.h"

/* Run worker `id` (valid: topo_worker_id_valid) with the settings in cfg (borrowed) until
 * stopped by a signal (or a fatal broker refusal). Returns the exit code: 0 after a clean
 * drain, 1 when work was abandoned or the worker could not start. */
int worker_run(const warren_config_t *cfg, const char *id);

/* An action_ref is 1..255 of [A-Za-z0-9._-], not starting with '.': it can name a file in the
 * handlers directory and nothing outside it. */
bool handlers_valid_ref(const char *action_ref);

#endif
