/*
 * SIGHUP in a daemon: read the configuration file and environment again (cfg_reload), log what
 * changed, and take the keys the table marks reloadable; the daemon hands them on to what it
 * set up from them at start (timers, runner limits, breakers). Both daemons, one behaviour.
 */
#ifndef WARREN_RELOAD_H
#define WARREN_RELOAD_H

#include "warren/config.h"

/* The daemon's part of a reload. */
typedef struct reload_hooks {
    /* Before anything changes: check what loaded would bring that the configuration does not
     * hold itself (the files a key names); -1 with the problem in err refuses the whole
     * reload, as a bad configuration file does. NULL: nothing to check. */
    int (*prepare)(void *arg, const warren_config_t *loaded, char *err, size_t errlen);
    /* After a reload: hand the reloadable keys on to what was set up from them at start; d
     * lists those that changed (already in the configuration). Runs after every successful
     * reload, changed keys or not. NULL: nothing to hand on. */
    void (*apply)(void *arg, const cfg_diff_t *d);
    void *arg;
} reload_hooks_t;

/*
 * Reload cfg (the daemon's own, read at start). A file that does not load, or that prepare
 * refuses, is logged with its error (file, line, key) and changes nothing: -1. Otherwise the
 * changed keys that need a restart are named in one warning and keep their values; the
 * reloadable ones are logged, then the log level and format are set from cfg and apply runs.
 * Returns how many reloadable keys changed. The service manager hears RELOADING=1 before and
 * READY=1 after (notify.h).
 */
int reload_config(warren_config_t *cfg, const reload_hooks_t *hooks);

#endif
