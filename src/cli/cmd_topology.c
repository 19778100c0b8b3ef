/* `warren topology declare|verify`: create the broker topology, or report how the live one drifts. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "warren/log.h"
#include "warren/ids.h"
#include "warren/topology.h"

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
    const char *mgmt_url;
    bool mgmt_option; /* --mgmt-url given (only verify takes it) */
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

/* -1 to run, or the exit code when the arguments already decided (help, usage error). */
static int parse_args(int argc, char **argv, topology_args_t *a)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"worker", required_argument, NULL, 'w'},
                                         {"mgmt-url", required_argument, NULL, 'm'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    a->mgmt_url = getenv("WARREN_MGMT_URL");
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:w:m:h", opts, NULL)) != -1) {
        if (ch == 'c') {
            a->config = optarg;
        } else if (ch == 'w') {
            if (!ids_worker_valid(optarg)) {
                fprintf(stderr, "warren topology: invalid worker id '%s': %s\n", optarg,
                        IDS_WORKER_RULE);
                return EXIT_USAGE;
            }
            a->workers[a->n_workers++] = optarg;
        } else if (ch == 'm') {
            if (refuse_password_in_argv(optarg))
                return EXIT_USAGE;
            a->mgmt_url = optarg;
            a->mgmt_option = true;
        } else {
            topology_usage(ch == 'h' ? stdout : stderr);
            return ch == 'h' ? EXIT_OK : EXIT_USAGE;
        }
    }
    a->action = optind == argc - 1 ? argv[optind] : "";
    if (strcmp(a->action, "declare") != 0 && strcmp(a->action, "verify") != 0) {
        topology_usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(a->action, "declare") && a->mgmt_option) {
        fprintf(stderr, "warren topology: --mgmt-url only applies to verify\n");
        return EXIT_USAGE;
    }
    return -1;
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
    int rc = parse_args(argc, argv, &a);
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
