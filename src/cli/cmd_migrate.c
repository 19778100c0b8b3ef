/* `warren migrate`: apply the numbered schema migrations, or show which are applied. */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"
#include "warren/db.h"
#include "warren/log.h"

typedef struct migrate_opts {
    const char *config;
    const char *dir;
    bool status;
} migrate_opts_t;

static void migrate_usage(FILE *out)
{
    fprintf(out,
            "usage: warren migrate [-c FILE] [--dir DIR] [--status]\n"
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
            db_schema_dir());
}

static int migrate_usage_error(void)
{
    fprintf(stderr, "usage: warren migrate [-c FILE] [--dir DIR] [--status] (see --help)\n");
    return -1;
}

/* Returns -1 on a usage error (already reported), 1 for --help, 0 to run. */
static int migrate_parse(int argc, char **argv, migrate_opts_t *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"dir", required_argument, NULL, 'd'},
        {"status", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0; /* our own messages, prefixed "warren migrate" */
    while ((c = getopt_long(argc, argv, ":c:d:sh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': o->config = optarg; break;
        case 'd': o->dir = optarg; break;
        case 's': o->status = true; break;
        case 'h': return 1;
        case ':':
            fprintf(stderr, "warren migrate: option '%s' needs a value\n", argv[optind - 1]);
            return migrate_usage_error();
        default:
            fprintf(stderr, "warren migrate: unknown option '%s'\n", argv[optind - 1]);
            return migrate_usage_error();
        }
    }
    if (optind < argc) {
        fprintf(stderr, "warren migrate: unexpected argument '%s'\n", argv[optind]);
        return migrate_usage_error();
    }
    return 0;
}

static int migrate_run(PGconn *db, const migrate_opts_t *o)
{
    char err[ERRBUF_SIZE] = "";
    const char *dir = o->dir ? o->dir : db_schema_dir();
    if (o->status) {
        int pending = db_migrate_status(db, dir, stdout, err, sizeof err);
        if (pending < 0) {
            fprintf(stderr, "warren migrate: %s\n", err);
            return EXIT_RUNTIME;
        }
        printf("%d pending\n", pending);
        return EXIT_OK;
    }
    int applied = db_migrate(db, dir, stdout, err, sizeof err);
    if (applied < 0) {
        fprintf(stderr, "warren migrate: %s\n", err);
        return EXIT_RUNTIME;
    }
    if (applied == 0)
        printf("nothing to apply: the database is up to date with %s\n", dir);
    else
        printf("applied %d migration%s from %s\n", applied, applied == 1 ? "" : "s", dir);
    return EXIT_OK;
}

int cmd_migrate(int argc, char **argv)
{
    migrate_opts_t o = {0};
    int parsed = migrate_parse(argc, argv, &o);
    if (parsed != 0) {
        if (parsed > 0)
            migrate_usage(stdout);
        return parsed > 0 ? EXIT_OK : EXIT_USAGE;
    }
    warren_config_t cfg = {0};
    if (cli_load_config(o.config, &cfg) != 0)
        return EXIT_USAGE;
    log_set_component("migrate");
    char err[ERRBUF_SIZE] = "";
    PGconn *db = db_connect(cfg.database.url, cfg.database.connect_timeout_s, err, sizeof err);
    cfg_free(&cfg);
    if (!db) {
        fprintf(stderr, "warren migrate: %s\n", err);
        return EXIT_RUNTIME;
    }
    int rc = migrate_run(db, &o);
    PQfinish(db);
    return rc;
}
