/* Placeholder: the config table lands in the next commit. */
#include <stdlib.h>
#include <string.h>
#include "warren/config.h"

int cfg_load(warren_config_t *cfg, const char *path, char *err, size_t errlen)
{
    (void)path;
    memset(cfg, 0, sizeof *cfg);
    snprintf(err, errlen, "configuration table not built yet");
    return -1;
}

void cfg_free(warren_config_t *cfg)
{
    (void)cfg;
}
