/* `warren worker [-c FILE] [--name ID]`: run a worker (docs/worker.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "warren/log.h"
#include "warren/paths.h"
#include "warren/ids.h"
#include "warren/worker.h"

static const char worker_usage_line[] = "warren worker [-c FILE] [--name ID]";

static void worker_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Consume dispatches from the queue worker.ID.executions, run their handlers and\n"
            "report running, completed and heartbeat messages to the executor over RabbitMQ.\n"
            "\n"
            "  -c, --config FILE  configuration file (default $WARREN_CONFIG)\n"
            "  -n, --name ID      worker id; default worker.name, else $WARREN_WORKER_NAME,\n"
            "                     else the host name. %s.\n"
            "\n"
            "SIGTERM or SIGINT: take no new work, let running executions finish (at most\n"
            "worker.shutdown_timeout_s), report them and exit 0. A second one, or SIGQUIT,\n"
            "exits at once and kills running handlers.\n"
            "\n"
            "Exit status: 0 stopped cleanly, 1 runtime failure or work abandoned, 2 usage or\n"
            "configuration error (including an invalid worker id).\n",
            worker_usage_line, IDS_WORKER_RULE);
}

/* The worker id and where it came from, in the documented order. */
static const char *worker_id(const char *option, const warren_config_t *cfg, char *host,
                             size_t hostlen, const char **source)
{
    const char *env = getenv("WARREN_WORKER_NAME");
    if (option) {
        *source = "--name";
        return option;
    }
    if (cfg->worker.name && *cfg->worker.name) {
        *source = "worker.name";
        return cfg->worker.name;
    }
    if (env && *env) {
        *source = "WARREN_WORKER_NAME";
        return env;
    }
    *source = "the host name";
    if (gethostname(host, hostlen) != 0)
        host[0] = '\0';
    host[hostlen - 1] = '\0';
    return host;
}

int cmd_worker(int argc, char **argv)
{
    const char *path, *name = NULL, *source = NULL;
    const cli_option_t options[] = {{"name", 'n', .value = &name}};
    const cli_spec_t spec = {"worker", worker_usage_line, options, CLI_COUNT(options), NULL};
    int rc = cli_parsed_exit(cli_parse(&spec, argc, argv, &path, NULL), worker_usage);
    if (rc >= 0)
        return rc;
    log_set_component("worker");
    warren_config_t cfg;
    if (cli_load_config(path, &cfg))
        return EXIT_USAGE;
    char host[256];
    const char *id = worker_id(name, &cfg, host, sizeof host, &source);
    if (!ids_worker_valid(id)) {
        fprintf(stderr,
                "warren worker: invalid worker id '%s' (from %s): %s; set one with --name, "
                "worker.name or WARREN_WORKER_NAME\n",
                id, source, IDS_WORKER_RULE);
        cfg_free(&cfg);
        return EXIT_USAGE;
    }
    rc = worker_run(&cfg, id);
    cfg_free(&cfg);
    return rc;
}

/* A worker never talks to PostgreSQL, yet the warren binary loads libpq and, with it, GnuTLS,
 * p11-kit, Kerberos and LDAP: about 3 MiB resident per worker. warren-worker is the same command
 * linked without them; exec'd, it keeps this process's id, so a service manager, a signal or a
 * test that holds the pid still has the worker. */
int cmd_worker_exec(int argc, char **argv)
{
    const char *bin = paths_worker_binary();
    if (bin[0] && access(bin, X_OK) == 0) {
        argv[0] = (char *)"warren-worker";
        execv(bin, argv);
        fprintf(stderr, "warren worker: cannot run %s (%s); running in this process\n", bin,
                strerror(errno));
    }
    return cmd_worker(argc, argv);
}
