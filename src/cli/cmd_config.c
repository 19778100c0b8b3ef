/* `warren config check|docs`: validate and print the effective configuration, or its reference. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static void config_usage(FILE *out)
{
    fprintf(
        out,
        "usage: warren config check [-c FILE]   validate, print effective values and sources\n"
        "       warren config docs               print the configuration reference (Markdown)\n");
}

int cmd_config(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *path = NULL;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        if (ch == 'c') {
            path = optarg;
        } else if (ch == 'h') {
            config_usage(stdout);
            return EXIT_OK;
        } else {
            config_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        config_usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[optind], "docs")) {
        cfg_write_docs(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[optind], "check")) {
        config_usage(stderr);
        return EXIT_USAGE;
    }
    warren_config_t cfg;
    if (cli_load_config(path, &cfg))
        return EXIT_USAGE;
    cfg_print(&cfg, stdout);
    printf("# configuration OK\n");
    cfg_free(&cfg);
    return EXIT_OK;
}
