/* `warren topology declare|verify`: create the broker topology, or report how it drifts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "warren/log.h"
#include "warren/ids.h"
#include "warren/topology.h"

static const char topology_usage_line[] =
    "warren topology declare|verify [-c FILE] [--worker ID ...] [--mgmt-url URL]";

static void topology_usage(FILE *out)
{
    fprintf(
        out,
        "usage: warren topology declare [-c FILE] [--worker ID ...]\n"
        "       warren topology verify [-c FILE] [--worker ID ...] [--mgmt-url URL]\n"
        "\n"
        "declare  create the exchanges, the dead-letter queue, the executor's queues and\n"
        "         each named worker's queue with the configured arguments\n"
        "verify   compare the broker with the configuration, one line per difference;\n"
        "         without --worker, every worker queue the management API lists is checked\n"
        "\n"
        "  -c, --config FILE   configuration file (default $WARREN_CONFIG)\n"
        "  -w, --worker ID     a worker's queue too (repeatable)\n"
        "  -m, --mgmt-url URL  management API, http://host:port (default $WARREN_MGMT_URL).\n"
        "                      Credentials come from the AMQP URL (message_queue.rabbitmq.url),\n"
        "                      or from WARREN_MGMT_URL=http://user:pass@host:port; never from\n"
        "                      the command line, where every local user can read them.\n"
        "                      Without a management URL only existence can be checked.\n"
        "\n"
        "Exit status: 0 ok, 1 broker failure or drift found, 2 usage or configuration error.\n");
}

typedef struct topology_args {
    const char *action;
    const char *config;
    const char *mgmt_url; /* --mgmt-url, else $WARREN_MGMT_URL */
    const char **workers;
    size_t n_workers;
} topology_args_t;

/* A password on the command line shows in ps and shell history: refused, with where it belongs.
 * (A warning would come after the password had leaked already.) */
static bool refuse_password_in_argv(const char *url)
{
    char *masked = cfg_mask_url(url);
    bool secret = !masked || strcmp(masked, url) != 0;
    if (secret)
        fprintf(
            stderr,
            "warren topology: --mgmt-url %s: a password on the command line is visible to every "
            "local user (ps) and stays in shell history.\n"
            "Leave the credentials out to use those of message_queue.rabbitmq.url, or put the "
            "whole URL in WARREN_MGMT_URL.\n",
            masked ? masked : "(URL with credentials)");
    free(masked);
    return secret;
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int parse_args(int argc, char **argv, topology_args_t *a)
{
    const char *mgmt_option = NULL;
    const cli_option_t options[] = {
        {"worker", 'w', .list = a->workers, .n = &a->n_workers},
        {"mgmt-url", 'm', .value = &mgmt_option},
    };
    const cli_spec_t spec = {"topology", topology_usage_line, options, CLI_COUNT(options),
                             "declare or verify"};
    int rc = cli_parse(&spec, argc, argv, &a->config, &a->action);
    if (rc != 0)
        return rc;
    if (strcmp(a->action, "declare") != 0 && strcmp(a->action, "verify") != 0) {
        cli_usage_error("topology", topology_usage_line, "unknown action '%s'", a->action);
        return -1;
    }
    for (size_t i = 0; i < a->n_workers; i++)
        if (!ids_worker_valid(a->workers[i])) {
            cli_usage_error("topology", topology_usage_line, "invalid worker id '%s': %s",
                            a->workers[i], IDS_WORKER_RULE);
            return -1;
        }
    if (mgmt_option && refuse_password_in_argv(mgmt_option))
        return -1;
    if (mgmt_option && !strcmp(a->action, "declare")) {
        cli_usage_error("topology", topology_usage_line, "--mgmt-url only applies to verify");
        return -1;
    }
    a->mgmt_url = mgmt_option ? mgmt_option : getenv("WARREN_MGMT_URL");
    return 0;
}

static int run_declare(mq_client_t *c, const warren_config_t *cfg, const topology_args_t *a)
{
    char err[ERRBUF_SIZE] = "";
    if (topo_declare_common(c, cfg, err, sizeof err) != 0) {
        fprintf(stderr, "warren topology declare: %s\n", err);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < a->n_workers; i++)
        if (topo_declare_worker(c, cfg, a->workers[i], err, sizeof err) != 0) {
            fprintf(stderr, "warren topology declare: %s\n", err);
            return EXIT_RUNTIME;
        }
    printf("topology declared: exchange %s, %s%d worker queue%s\n",
           cfg->rabbitmq.exchanges.executions,
           cfg->rabbitmq.dead_letter.enabled ? "dead-letter queue, executor queues, "
                                             : "executor queues (dead-lettering disabled), ",
           (int)a->n_workers, a->n_workers == 1 ? "" : "s");
    return EXIT_OK;
}

static int run_verify(mq_client_t *c, const warren_config_t *cfg, const topology_args_t *a)
{
    int drifts = topo_verify(c, cfg, a->mgmt_url, a->workers, a->n_workers, stdout);
    if (drifts < 0) {
        fprintf(stderr, "warren topology verify: cannot inspect the broker (see the log above)\n");
        return EXIT_RUNTIME;
    }
    if (drifts > 0) {
        printf("%d difference%s between the broker and the configuration\n", drifts,
               drifts == 1 ? "" : "s");
        return EXIT_RUNTIME;
    }
    printf("no differences between the broker and the configuration\n");
    return EXIT_OK;
}

int cmd_topology(int argc, char **argv)
{
    topology_args_t a = {.workers = calloc((size_t)argc, sizeof(char *))};
    if (!a.workers)
        return EXIT_RUNTIME;
    int rc = cli_parsed_exit(parse_args(argc, argv, &a), topology_usage);
    warren_config_t cfg;
    if (rc >= 0 || cli_load_config(a.config, &cfg) != 0) {
        free(a.workers);
        return rc >= 0 ? rc : EXIT_USAGE;
    }
    log_set_component("cli");
    mq_options_t o;
    mq_options_from_config(&o, &cfg, "warren-topology");
    mq_client_t *c = mq_new(&o);
    if (!c)
        rc = EXIT_RUNTIME;
    else
        rc = !strcmp(a.action, "declare") ? run_declare(c, &cfg, &a) : run_verify(c, &cfg, &a);
    if (c)
        mq_destroy(c);
    cfg_free(&cfg);
    free(a.workers);
    return rc;
}
