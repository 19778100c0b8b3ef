/* Entry point: dispatches `warren SUBCOMMAND ...` to the command table. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "warren/version.h"

static const struct {
    const char *name;
    cli_command_fn fn;
    const char *summary;
} commands[] = {
    {"executor", cmd_executor, "run the executor: scheduler, results, dead-letter handler"},
    {"worker", cmd_worker_exec, "run a worker that executes handlers"},
    {"submit", cmd_submit, "submit an execution"},
    {"get", cmd_get, "show one execution"},
    {"list", cmd_list, "list executions"},
    {"workers", cmd_workers, "list workers"},
    {"cancel", cmd_cancel, "cancel an execution"},
    {"dlq", cmd_dlq, "investigate, resolve, redrive and purge dead letters"},
    {"action", cmd_action, "list actions; pause or resume an action's dispatch"},
    {"staleness", cmd_staleness, "non-terminal executions: time in state and health"},
    {"retry", cmd_retry, "retry a failed, timed out or abandoned execution by hand"},
    {"investigate", cmd_investigate, "send an execution to investigation by hand"},
    {"complete", cmd_complete, "complete a failed, abandoned or stuck execution by hand"},
    {"migrate", cmd_migrate, "apply database migrations"},
    {"topology", cmd_topology, "declare or verify the broker topology"},
    {"config", cmd_config, "check and print the effective configuration"},
    {"version", cmd_version, "print the version"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: warren [--help] COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\nRun 'warren COMMAND --help' for a command's options.\n"
            "Configuration: -c FILE or WARREN_CONFIG; WARREN__SECTION__KEY overrides any key.\n"
            "submit, get, list, workers, cancel, retry, investigate, complete, dlq, staleness\n"
            "and action\n"
            "use the executor's HTTP API when WARREN_API_URL is set (WARREN_API_KEY: the key),\n"
            "else the database. An https:// URL is verified against the system's CAs or\n"
            "WARREN_API_CA (a PEM file); WARREN_API_INSECURE=1 skips the check.\n"
            "Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "warren: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
