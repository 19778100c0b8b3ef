/* `warren executor [-c FILE]`: run the executor daemon (src/executor/). */
#include <stdio.h>
#include "cli/cli.h"
#include "warren/executor.h"
#include "warren/log.h"

static const char executor_usage_line[] = "warren executor [-c FILE]";

static void executor_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n\n"
            "Runs the executor: schedules requested executions onto live workers, applies\n"
            "their results and heartbeats, handles dead letters and timeouts.\n"
            "SIGTERM/SIGINT: finish the batches in hand and exit 0 (twice: exit at once).\n"
            "SIGQUIT: exit at once. Needs `warren migrate` to have run.\n",
            executor_usage_line);
}

int cmd_executor(int argc, char **argv)
{
    const cli_spec_t spec = {"executor", executor_usage_line, NULL, 0, NULL};
    const char *path;
    int rc = cli_parsed_exit(cli_parse(&spec, argc, argv, &path, NULL), executor_usage);
    if (rc >= 0)
        return rc;
    warren_config_t cfg;
    if (cli_load_config(path, &cfg) != 0)
        return EXIT_USAGE;
    log_set_component("executor");
    rc = executor_run(&cfg);
    cfg_free(&cfg);
    return rc;
}
