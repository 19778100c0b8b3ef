/* Helpers shared by subcommands: configuration loading, help detection, `warren version`. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "warren/log.h"
#include "warren/version.h"

int cli_load_config(const char *path, warren_config_t *cfg)
{
    char err[ERRBUF_SIZE] = "";
    if (cfg_load(cfg, path, err, sizeof err) != 0) {
        fprintf(stderr, "warren: configuration error: %s\n", err);
        cfg_free(cfg);
        return -1;
    }
    log_setup((log_level_t)cfg->log.level, (log_format_t)cfg->log.format);
    return 0;
}

bool cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return true;
    return false;
}

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("warren %s\n", WARREN_VERSION);
    return EXIT_OK;
}
