/* Subcommands of the warren binary and the helpers they share (option parsing, config). */
#ifndef WARREN_CLI_H
#define WARREN_CLI_H

#include <stdio.h>
#include "warren/config.h"

/* Every subcommand: argv[0] is the subcommand name. Returns an exit code (EXIT_*). */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_version(int argc, char **argv);
int cmd_config(int argc, char **argv);   /* config check [-c FILE] */
int cmd_migrate(int argc, char **argv);  /* migrate [-c FILE] */
int cmd_topology(int argc, char **argv); /* topology declare|verify [-c FILE] */
int cmd_executor(int argc, char **argv);
int cmd_worker(int argc, char **argv);
/* `warren worker`: exec warren-worker (the same command without libpq) from beside this binary;
 * cmd_worker here when there is none. */
int cmd_worker_exec(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_workers(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_dlq(int argc, char **argv); /* dlq stats|list|show|resolve|redrive|purge */
int cmd_staleness(int argc, char **argv);
int cmd_action(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_investigate(int argc, char **argv);
int cmd_complete(int argc, char **argv);

/*
 * Load the configuration for a command: -c FILE / WARREN_CONFIG, defaults, environment.
 * Sets up logging from it. On error prints the problem to stderr and returns -1 (exit 2).
 * The caller frees cfg with cfg_free().
 */
int cli_load_config(const char *path, warren_config_t *cfg) WARN_UNUSED;

/*
 * Option parsing: one parser for every command, from a table of its options. Every command
 * also takes -c/--config FILE and -h/--help. A usage error reads
 *   warren CMD: <problem>
 *   usage: <the command's one-line usage> (see --help)
 * and the command exits with EXIT_USAGE.
 */
typedef struct cli_option {
    const char *name;   /* --name */
    char letter;        /* -l as well; 0 for none */
    const char **value; /* takes a value, stored here (the last one given wins), or... */
    const char **list;  /* ...appended here (repeatable; room for argc values), counted in *n */
    size_t *n;
    bool *flag; /* takes no value: set to true */
} cli_option_t;

#define CLI_COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef struct cli_spec {
    const char *cmd;   /* "submit": its errors read "warren submit: ..." */
    const char *usage; /* the one-line usage */
    const cli_option_t *options;
    size_t n_options;
    const char *operand; /* the name of its one operand ("ID"); NULL when it takes none */
} cli_spec_t;

/* Parse argv: 1 for --help, -1 after reporting a usage error, 0 with the options stored, the
 * configuration file (NULL when not given) in *config and the operand (if any) in *operand. */
int cli_parse(const cli_spec_t *s, int argc, char **argv, const char **config,
              const char **operand);
/* cli_parse for `warren CMD ID [--json]` (get, cancel): the operand must be an execution id, a
 * positive whole number. */
int cli_parse_id(const char *cmd, const char *usage, int argc, char **argv, const char **config,
                 bool *json, const char **id);
/* Report a usage error found after parsing; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The exit code when parsing decided it: help (1) printed to stdout, EXIT_OK; a usage error
 * (-1), EXIT_USAGE. For parsed == 0 it returns -1: go on and run. */
int cli_parsed_exit(int parsed, void (*usage)(FILE *out));

#endif
