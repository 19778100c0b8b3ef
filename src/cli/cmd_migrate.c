/* `warren migrate`: apply the numbered schema migrations, or show which are applied. */
#include <stdio.h>
#include "cli/cli.h"
#include "cli/cli_db.h"
#include "warren/db.h"
#include "warren/log.h"

static const char migrate_usage_line[] = "warren migrate [-c FILE] [--dir DIR] [--status]";

typedef struct migrate_opts {
    const char *config;
    const char *dir;
    bool status;
} migrate_opts_t;

static void migrate_usage(FILE *out)
{
    fprintf(out,
            "usage: %s\n"
            "\n"
            "Apply pending schema migrations (NNN_*.sql, in order, each in its own transaction)\n"
            "to database.url, recording each in warren_migrations.\n"
            "\n"
            "  -c, --config FILE  configuration file (default: $WARREN_CONFIG)\n"
            "  -d, --dir DIR      migrations directory (default: $WARREN_SCHEMA_DIR, else\n"
            "                     %s)\n"
            "  -s, --status       list migrations as applied or pending; change nothing\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 a migration or the database failed, 2 usage or configuration.\n",
            migrate_usage_line, db_schema_dir());
}

/* Returns -1 after reporting a usage error, 1 for --help, 0 to run. */
static int migrate_parse(int argc, char **argv, migrate_opts_t *o)
{
    const cli_option_t options[] = {
        {"dir", 'd', .value = &o->dir},
        {"status", 's', .flag = &o->status},
    };
    const cli_spec_t spec = {"migrate", migrate_usage_line, options, CLI_COUNT(options), NULL};
    return cli_parse(&spec, argc, argv, &o->config, NULL);
}

static int migrate_run(PGconn *db, const warren_config_t *cfg, const void *opts)
{
    const migrate_opts_t *o = opts;
    char err[ERRBUF_SIZE] = "";
    const char *dir = o->dir ? o->dir : db_schema_dir();
    log_set_component("migrate");
    if (o->status) {
        int pending = db_migrate_status(db, dir, stdout, err, sizeof err);
        if (pending < 0) {
            fprintf(stderr, "warren migrate: %s\n", err);
            return EXIT_RUNTIME;
        }
        printf("%d pending\n", pending);
        return EXIT_OK;
    }
    int definitions = 0;
    int applied = db_migrate(db, dir, stdout, &definitions, err, sizeof err);
    if (applied < 0) {
        fprintf(stderr, "warren migrate: %s\n", err);
        return EXIT_RUNTIME;
    }
    if (applied > 0)
        printf("applied %d migration%s from %s\n", applied, applied == 1 ? "" : "s", dir);
    else if (definitions > 0)
        printf("no migration to apply in %s; its definitions were applied again\n", dir);
    else
        printf("nothing to apply: the database is up to date with %s\n", dir);
    return EXIT_OK;
}

int cmd_migrate(int argc, char **argv)
{
    migrate_opts_t o = {0};
    int parsed = migrate_parse(argc, argv, &o);
    return cli_db_command("migrate", parsed, migrate_usage, o.config, migrate_run, &o);
}
