/* Subcommands of the warren binary and the helpers they share (option parsing, config). */
#ifndef WARREN_CLI_H
#define WARREN_CLI_H

#include "warren/config.h"

/* Every subcommand: argv[0] is the subcommand name. Returns an exit code (EXIT_*). */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_version(int argc, char **argv);
int cmd_config(int argc, char **argv);   /* config check [-c FILE] */
int cmd_migrate(int argc, char **argv);  /* migrate [-c FILE] */
int cmd_topology(int argc, char **argv); /* topology declare|verify [-c FILE] */
int cmd_executor(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_workers(int argc, char **argv);
int cmd_cancel(int argc, char **argv);

/*
 * Load the configuration for a command: -c FILE / WARREN_CONFIG, defaults, environment.
 * Sets up logging from it. On error prints the problem to stderr and returns -1 (exit 2).
 * The caller frees cfg with cfg_free().
 */
int cli_load_config(const char *path, warren_config_t *cfg) WARN_UNUSED;
/* True when argv holds -h or --help. */
bool cli_wants_help(int argc, char **argv);

#endif
