/*
 * SIGHUP in a daemon: read the configuration file and environment again (cfg_reload), log what
 * changed, and take the keys the table marks reloadable; the daemon hands them on to what it
 * set up from them at start (timers, runner limits, breakers). Both daemons, one behaviour.
 */
#ifndef WARREN_RELOAD_H
#define WARREN_RELOAD_H

#include "warren/config.h"

/* The daemon's part: d lists the reloadable keys that changed, already in cfg. */
typedef void (*reload_apply_fn)(void *arg, const cfg_diff_t *d);

/*
 * Reload cfg (the daemon's own, read at start). A file that does not load is logged with its
 * error (file, line, key) and changes nothing: -1. Otherwise the changed keys that need a
 * restart are named in one warning and keep their values; the reloadable ones are logged,
 * then the log level and format are set from cfg and apply(arg, d) runs when any changed.
 * Returns how many reloadable keys changed. The service manager hears RELOADING=1 before
 * and READY=1 after (notify.h).
 */
int reload_config(warren_config_t *cfg, reload_apply_fn apply, void *arg);

#endif
