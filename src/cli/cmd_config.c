/* `warren config check|docs`: validate and print the effective configuration, or its reference. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "warren/retry.h"

static const char config_usage_line[] = "warren config check|docs [-c FILE]";

static void config_usage(FILE *out)
{
    fprintf(
        out,
        "usage: warren config check [-c FILE]   validate, print effective values and sources\n"
        "       warren config docs               print the configuration reference (Markdown)\n");
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run *action. */
static int config_parse(int argc, char **argv, const char **config, const char **action)
{
    const cli_spec_t spec = {"config", config_usage_line, NULL, 0, "check or docs"};
    int rc = cli_parse(&spec, argc, argv, config, action);
    if (rc == 0 && strcmp(*action, "check") != 0 && strcmp(*action, "docs") != 0) {
        cli_usage_error("config", config_usage_line, "unknown action '%s'", *action);
        return -1;
    }
    return rc;
}

int cmd_config(int argc, char **argv)
{
    const char *path, *action = NULL;
    int rc = cli_parsed_exit(config_parse(argc, argv, &path, &action), config_usage);
    if (rc >= 0)
        return rc;
    if (!strcmp(action, "docs")) {
        cfg_write_docs(stdout);
        return EXIT_OK;
    }
    warren_config_t cfg;
    if (cli_load_config(path, &cfg))
        return EXIT_USAGE;
    cfg_print(&cfg, stdout);
    retry_policies_print(&cfg, stdout);
    printf("# configuration OK\n");
    cfg_free(&cfg);
    return EXIT_OK;
}
