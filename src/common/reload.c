/* A daemon's SIGHUP: the configuration again, what changed logged, the reloadable keys taken. */
#include <stdio.h>
#include "warren/log.h"
#include "warren/notify.h"
#include "warren/reload.h"

/* Room for every key path of the table, comma-separated. */
#define KEYS_TEXT_MAX 4096

/* Load and check the new configuration; -1 with the problem in err. */
static int load_checked(const warren_config_t *cfg, warren_config_t *loaded, cfg_diff_t *d,
                        const reload_hooks_t *h, char *err, size_t errlen)
{
    if (cfg_reload_load(cfg, loaded, d, err, errlen) != 0)
        return -1;
    return h->prepare ? h->prepare(h->arg, loaded, err, errlen) : 0;
}

int reload_config(warren_config_t *cfg, const reload_hooks_t *h)
{
    char err[ERRBUF_SIZE] = "", keys[KEYS_TEXT_MAX], status[128];
    cfg_diff_t d;
    warren_config_t loaded;
    notify_reloading();
    if (load_checked(cfg, &loaded, &d, h, err, sizeof err) != 0) {
        cfg_free(&loaded);
        log_kv(LOG_ERROR, "reload failed: keeping the running configuration", "error", err, NULL);
        notify_reloaded("reload failed: the running configuration is kept (see the log)");
        return -1;
    }
    cfg_reload_take(cfg, &loaded);
    cfg_free(&loaded);
    /* Logged at the level in force until now: a reload that raises it still says so. */
    if (d.n_restart > 0) {
        cfg_keys_text(d.restart, d.n_restart, keys, sizeof keys);
        log_kv(LOG_WARN, "reload: changed keys need a restart; they keep their running values",
               "keys", keys, NULL);
    }
    cfg_keys_text(d.reload, d.n_reload, keys, sizeof keys);
    log_kv(LOG_INFO, "configuration reloaded", "file", cfg->file ? cfg->file : "", "changed", keys,
           NULL);
    log_setup((log_level_t)cfg->log.level, (log_format_t)cfg->log.format);
    if (h->apply)
        h->apply(h->arg, &d);
    snprintf(status, sizeof status, "configuration reloaded: %zu keys changed, %zu need a restart",
             d.n_reload, d.n_restart);
    notify_reloaded(status);
    return (int)d.n_reload;
}
