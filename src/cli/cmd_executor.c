/* `warren executor [-c FILE]`: run the executor daemon (src/executor/). */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"
#include "warren/executor.h"
#include "warren/log.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: warren executor [-c FILE]\n\n"
                 "Runs the executor: schedules requested executions onto live workers, applies\n"
                 "their results and heartbeats, handles dead letters and timeouts.\n"
                 "SIGTERM/SIGINT: finish the batches in hand and exit 0 (twice: exit at once).\n"
                 "SIGQUIT: exit at once. Needs `warren migrate` to have run.\n");
}

int cmd_executor(int argc, char **argv)
{
    const char *path = NULL;
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return EXIT_OK;
    }
    int opt;
    optind = 1;
    while ((opt = getopt(argc, argv, "c:")) != -1) {
        if (opt != 'c') {
            usage(stderr);
            return EXIT_USAGE;
        }
        path = optarg;
    }
    if (optind < argc) {
        fprintf(stderr, "warren executor: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    warren_config_t cfg;
    if (cli_load_config(path, &cfg) != 0)
        return EXIT_USAGE;
    log_set_component("executor");
    int rc = executor_run(&cfg);
    cfg_free(&cfg);
    return rc;
}
