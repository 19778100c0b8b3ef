/* Helpers shared by subcommands: configuration loading, usage errors, `warren version`. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include "cli/cli.h"
#include "cli/cli_fmt.h"
#include "warren/log.h"
#include "warren/version.h"

int cli_load_config(const char *path, warren_config_t *cfg)
{
    char err[ERRBUF_SIZE] = "";
    if (cfg_load(cfg, path, err, sizeof err) != 0) {
        fprintf(stderr, "warren: configuration error: %s\n", err);
        cfg_free(cfg);
        return -1;
    }
    log_setup((log_level_t)cfg->log.level, (log_format_t)cfg->log.format);
    return 0;
}

int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "warren %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s (see --help)\n", usage);
    return EXIT_USAGE;
}

/* What getopt_long returned for option i of s (its long name's val): a letter, or 256 + i. */
static int option_key(const cli_spec_t *s, size_t i)
{
    return s->options[i].letter ? s->options[i].letter : 256 + (int)i;
}

static void store(const cli_option_t *o, const char *arg)
{
    if (o->flag)
        *o->flag = true;
    else if (o->list)
        o->list[(*o->n)++] = arg;
    else /* one of flag, list and value is set (cli_option_t), whatever clang-tidy assumes of
          * a caller's flag pointer: NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
        *o->value = arg;
}

int cli_parse(const cli_spec_t *s, int argc, char **argv, const char **config, const char **operand)
{
    struct option longopts[s->n_options + 3];
    char shortopts[3 * s->n_options + 8];
    size_t k = (size_t)snprintf(shortopts, sizeof shortopts, ":c:h");
    for (size_t i = 0; i < s->n_options; i++) {
        const cli_option_t *o = &s->options[i];
        int arg = o->flag ? no_argument : required_argument;
        longopts[i] = (struct option){o->name, arg, NULL, option_key(s, i)};
        if (o->letter) {
            shortopts[k++] = o->letter;
            if (arg == required_argument)
                shortopts[k++] = ':';
        }
    }
    shortopts[k] = '\0';
    longopts[s->n_options] = (struct option){"config", required_argument, NULL, 'c'};
    longopts[s->n_options + 1] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[s->n_options + 2] = (struct option){NULL, 0, NULL, 0};

    *config = NULL;
    int ch;
    optind = 1;
    opterr = 0; /* the messages are ours, prefixed "warren CMD" */
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (ch == 'h')
            return 1;
        if (ch == 'c') {
            *config = optarg;
            continue;
        }
        size_t i = 0;
        while (i < s->n_options && option_key(s, i) != ch)
            i++;
        if (i < s->n_options) {
            store(&s->options[i], optarg);
        } else {
            cli_usage_error(s->cmd, s->usage,
                            ch == ':' ? "option '%s' needs a value" : "unknown option '%s'",
                            argv[optind - 1]);
            return -1;
        }
    }
    if (s->operand && optind == argc) {
        cli_usage_error(s->cmd, s->usage, "%s missing", s->operand);
        return -1;
    }
    if (s->operand)
        *operand = argv[optind++];
    if (optind < argc) {
        cli_usage_error(s->cmd, s->usage, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    return 0;
}

int cli_parse_id(const char *cmd, const char *usage, int argc, char **argv, const char **config,
                 bool *json, const char **id)
{
    const cli_option_t options[] = {{"json", 'j', .flag = json}};
    const cli_spec_t spec = {cmd, usage, options, CLI_COUNT(options), "ID"};
    int rc = cli_parse(&spec, argc, argv, config, id);
    int64_t v;
    if (rc == 0 && cli_parse_int64(*id, 1, INT64_MAX, &v) != 0) {
        cli_usage_error(cmd, usage, "an execution id is a positive whole number");
        return -1;
    }
    return rc;
}

int cli_parsed_exit(int parsed, void (*usage)(FILE *out))
{
    if (parsed > 0)
        usage(stdout);
    return parsed > 0 ? EXIT_OK : parsed < 0 ? EXIT_USAGE : -1;
}

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("warren %s\n", WARREN_VERSION);
    return EXIT_OK;
}
