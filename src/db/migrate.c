/* Schema migrations: apply schema/NNN_*.sql in order, each once, each in its own transaction;
 * then re-apply the definitions of schema/functions/NNN_*.sql, all in one transaction, when a
 * migration was applied or a definition file changed (docs/schema.md). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "warren/db.h"
#include "warren/log.h"
#include "warren/paths.h"
#include "warren/utf8.h"
#include "db/db_internal.h"
#include "db/sql_split.h"

/* Session advisory lock held while migrating, so two migrators never interleave. */
#define MIGRATE_LOCK_KEY "7318388542146" /* arbitrary, fixed for the project */
#define MIGRATION_MAX_BYTES (4 * 1024 * 1024)
#define EXCERPT_CHARS 80
/* The current definitions of functions, views and triggers, under the schema directory. */
#define DEFINITIONS_SUBDIR "functions"
/* "RECORDED  CURRENT  NNN_name.sql" lines (sha256 in hex): an applied migration recorded with
 * RECORDED, a checksum its file had before it was edited on purpose, is applied as long as the
 * file's checksum is CURRENT (docs/schema.md, "Edited migrations"). */
#define SUPERSEDED_FILE "superseded.sha256"

typedef struct mig_file {
    char name[256];   /* "001_init.sql" */
    char version[32]; /* "001": the digits as written, the key in warren_migrations */
    long number;      /* ordering */
    char *path;       /* malloc'd */
    char *sql;        /* malloc'd contents, NUL-terminated */
    size_t len;
    char checksum[65]; /* sha256 hex of the contents */
} mig_file_t;

typedef struct mig_set {
    mig_file_t *files;
    size_t n;
    PGresult *applied; /* version, filename, checksum, applied_at; NULL when no table yet */
    char *superseded;  /* SUPERSEDED_FILE's text, NULL when there is none */
    bool redo;         /* definitions: a migration was applied after them */
} mig_set_t;

static void mig_set_free(mig_set_t *set)
{
    for (size_t i = 0; i < set->n; i++) {
        free(set->files[i].path);
        free(set->files[i].sql);
    }
    free(set->files);
    PQclear(set->applied);
    free(set->superseded);
    memset(set, 0, sizeof *set);
}

/* Print progress to out; with no out (a daemon migrating at start-up) log it instead. */
static void report(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(FILE *out, const char *fmt, ...)
{
    char line[ERRBUF_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (out) {
        fprintf(out, "%s\n", line);
        (void)fflush(out);
    } else {
        log_kv(LOG_INFO, line, "component", "migrate", NULL);
    }
}

const char *db_schema_dir(void)
{
    const char *env = getenv("WARREN_SCHEMA_DIR");
    if (env && *env)
        return env;
    return paths_schema_dir();
}

/* "NNN_anything.sql" -> true with the digit prefix in version. */
static bool mig_name_parse(const char *name, char *version, size_t vlen, long *number)
{
    size_t digits = strspn(name, "0123456789");
    size_t len = strlen(name);
    if (digits == 0 || digits >= vlen || name[digits] != '_' || len < digits + 5 ||
        strcmp(name + len - 4, ".sql") != 0)
        return false;
    memcpy(version, name, digits);
    version[digits] = '\0';
    *number = strtol(version, NULL, 10);
    return true;
}

static int mig_cmp(const void *a, const void *b)
{
    const mig_file_t *x = a, *y = b;
    if (x->number != y->number)
        return x->number < y->number ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int mig_add(mig_set_t *set, const char *dir, const char *name, const char *version,
                   long number, char *err, size_t errlen)
{
    mig_file_t *grown = realloc(set->files, (set->n + 1) * sizeof *grown);
    if (!grown) {
        snprintf(err, errlen, "out of memory listing %s", dir);
        return -1;
    }
    set->files = grown;
    mig_file_t *f = &set->files[set->n];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    snprintf(f->version, sizeof f->version, "%s", version);
    f->number = number;
    if (asprintf(&f->path, "%s/%s", dir, name) < 0) {
        f->path = NULL;
        snprintf(err, errlen, "out of memory listing %s", dir);
        return -1;
    }
    set->n++;
    return 0;
}

/* Collect NNN_*.sql from dir in numeric order; two files with one number is an error. */
static int mig_list(const char *dir, mig_set_t *set, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot open schema directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char version[32];
        long number;
        if (strlen(e->d_name) < sizeof set->files->name &&
            mig_name_parse(e->d_name, version, sizeof version, &number))
            rc = mig_add(set, dir, e->d_name, version, number, err, errlen);
    }
    closedir(d);
    if (rc != 0)
        return -1;
    if (set->n == 0) {
        /* Surely a wrong directory, not a schema with nothing in it. */
        snprintf(err, errlen, "no migrations (NNN_name.sql) in %s", dir);
        return -1;
    }
    qsort(set->files, set->n, sizeof *set->files, mig_cmp);
    for (size_t i = 1; i < set->n; i++) {
        if (set->files[i].number == set->files[i - 1].number) {
            snprintf(err, errlen, "%s: two migrations share number %ld: %s and %s", dir,
                     set->files[i].number, set->files[i - 1].name, set->files[i].name);
            return -1;
        }
    }
    return 0;
}

static int mig_read(mig_file_t *f, char *err, size_t errlen)
{
    FILE *fp = fopen(f->path, "rb");
    struct stat st;
    if (!fp || fstat(fileno(fp), &st) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", f->path, strerror(errno));
        if (fp)
            (void)fclose(fp);
        return -1;
    }
    if (st.st_size > MIGRATION_MAX_BYTES) {
        snprintf(err, errlen, "%s: larger than %d bytes", f->path, MIGRATION_MAX_BYTES);
        (void)fclose(fp);
        return -1;
    }
    f->sql = malloc((size_t)st.st_size + 1);
    f->len = f->sql ? fread(f->sql, 1, (size_t)st.st_size, fp) : 0;
    bool failed = !f->sql || ferror(fp) || f->len != (size_t)st.st_size;
    (void)fclose(fp);
    if (failed) {
        snprintf(err, errlen, "cannot read %s: %s", f->path,
                 f->sql ? "short read" : "out of memory");
        return -1;
    }
    f->sql[f->len] = '\0';
    if (memchr(f->sql, '\0', f->len)) {
        snprintf(err, errlen, "%s: contains a NUL byte (not SQL text)", f->path);
        return -1;
    }
    return 0;
}

/* sha256 of the exact file bytes, computed by the server (same as `sha256sum FILE`). */
static int mig_checksum(PGconn *db, mig_file_t *f, char *err, size_t errlen)
{
    const Oid types[] = {17 /* bytea */};
    const char *values[] = {f->sql};
    const int lengths[] = {(int)f->len};
    const int formats[] = {1};
    PGresult *res = PQexecParams(db, "SELECT encode(sha256($1), 'hex')", 1, types, values, lengths,
                                 formats, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        char why[ERRBUF_SIZE];
        db_describe_error(db, res, why, sizeof why);
        snprintf(err, errlen, "%s: checksum: %s", f->path, why);
        PQclear(res);
        return -1;
    }
    snprintf(f->checksum, sizeof f->checksum, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}

/* SUPERSEDED_FILE of dir into set->superseded; none is fine. */
static int mig_load_superseded(const char *dir, mig_set_t *set, char *err, size_t errlen)
{
    mig_file_t f = {0};
    int rc = 0;
    if (asprintf(&f.path, "%s/%s", dir, SUPERSEDED_FILE) < 0) {
        snprintf(err, errlen, "out of memory reading %s", dir);
        return -1;
    }
    if (access(f.path, F_OK) == 0) {
        rc = mig_read(&f, err, errlen);
        set->superseded = f.sql;
        f.sql = NULL;
    }
    free(f.path);
    free(f.sql);
    return rc;
}

/* Read every listed file and checksum it. */
static int mig_load(PGconn *db, mig_set_t *set, char *err, size_t errlen)
{
    for (size_t i = 0; i < set->n; i++)
        if (mig_read(&set->files[i], err, errlen) != 0 ||
            mig_checksum(db, &set->files[i], err, errlen) != 0)
            return -1;
    return 0;
}

#define APPLIED_AT "to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/* The rows of query into set->applied, none when table does not exist yet (read-only callers). */
static int mig_load_rows(PGconn *db, const char *table, const char *query, mig_set_t *set,
                         char *err, size_t errlen)
{
    PGresult *res;
    const char *params[] = {table};
    if (db_exec(db, "SELECT to_regclass($1) IS NOT NULL", 1, params, &res, err, errlen) != 0)
        return -1;
    bool exists = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!exists)
        return 0;
    return db_exec(db, query, 0, NULL, &set->applied, err, errlen);
}

/* The recorded migrations. */
static int mig_load_applied(PGconn *db, mig_set_t *set, char *err, size_t errlen)
{
    return mig_load_rows(db, "warren_migrations",
                         "SELECT version, filename, checksum, " APPLIED_AT
                         " FROM warren_migrations ORDER BY version",
                         set, err, errlen);
}

/* Row of version in the applied set, -1 when it was never applied. */
static int mig_applied_row(const mig_set_t *set, const char *version)
{
    int rows = set->applied ? PQntuples(set->applied) : 0;
    for (int r = 0; r < rows; r++)
        if (!strcmp(PQgetvalue(set->applied, r, 0), version))
            return r;
    return -1;
}

/* The recorded checksum of row is one that f's file had before an edit listed as accepted, and
 * the file is as that edit left it. */
static bool mig_superseded(const mig_set_t *set, const mig_file_t *f, int row)
{
    if (!set->superseded)
        return false;
    char needle[sizeof f->name + 160];
    int n = snprintf(needle, sizeof needle, "%s  %s  %s", PQgetvalue(set->applied, row, 2),
                     f->checksum, f->name);
    for (const char *p = strstr(set->superseded, needle); p; p = strstr(p + 1, needle))
        if ((p == set->superseded || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static bool mig_changed(const mig_set_t *set, const mig_file_t *f, int row)
{
    return strcmp(PQgetvalue(set->applied, row, 2), f->checksum) != 0 &&
           !mig_superseded(set, f, row);
}

/* An applied migration whose file changed means the database no longer matches the files. */
static int mig_verify(const mig_set_t *set, char *err, size_t errlen)
{
    for (size_t i = 0; i < set->n; i++) {
        const mig_file_t *f = &set->files[i];
        int row = mig_applied_row(set, f->version);
        if (row >= 0 && mig_changed(set, f, row)) {
            snprintf(err, errlen,
                     "%s was changed after it was applied on %s (sha256 recorded %.12s..., now "
                     "%.12s...): put the change in a new migration instead",
                     f->path, PQgetvalue(set->applied, row, 3), PQgetvalue(set->applied, row, 2),
                     f->checksum);
            return -1;
        }
    }
    return 0;
}

/* An applied version with no file: a database newer than this checkout. */
static bool mig_is_orphan(const mig_set_t *set, int row)
{
    for (size_t i = 0; i < set->n; i++)
        if (!strcmp(set->files[i].version, PQgetvalue(set->applied, row, 0)))
            return false;
    return true;
}

/* Orphans only deserve a warning: an older binary may still run against a newer schema. */
static void mig_warn_orphans(const mig_set_t *set, const char *dir)
{
    int rows = set->applied ? PQntuples(set->applied) : 0;
    for (int r = 0; r < rows; r++)
        if (mig_is_orphan(set, r))
            log_kv(LOG_WARN, "applied migration has no file", "version",
                   PQgetvalue(set->applied, r, 0), "filename", PQgetvalue(set->applied, r, 1),
                   "dir", dir, NULL);
}

/* Statement excerpt for messages: whitespace runs collapsed, cut to at most EXCERPT_CHARS
 * bytes on a character boundary. buf holds at least EXCERPT_CHARS + 8 bytes. */
static void mig_excerpt(const char *s, size_t len, char *buf)
{
    size_t o = 0, i = 0;
    bool space = false;
    /* Collapse one byte past the limit: the cut needs to see where the next character starts. */
    for (; i < len && o <= EXCERPT_CHARS; i++) {
        if (isspace((unsigned char)s[i])) {
            space = o > 0;
            continue;
        }
        if (space)
            buf[o++] = ' ';
        space = false;
        buf[o++] = s[i];
    }
    size_t keep = utf8_cut(buf, o, EXCERPT_CHARS);
    bool more = keep < o || i < len;
    while (keep > 0 && buf[keep - 1] == ' ')
        keep--;
    memcpy(buf + keep, more ? "..." : "", more ? 4 : 1);
}

/* "FILE:LINE: statement `excerpt` (line N) failed: why"; the excerpt comes before the
 * server text, which may be long and is the part cut short. */
static void mig_statement_error(PGconn *db, const PGresult *res, const mig_file_t *f,
                                const sql_stmt_t *st, char *err, size_t errlen)
{
    char why[ERRBUF_SIZE], excerpt[EXCERPT_CHARS + 8];
    db_describe_error(db, res, why, sizeof why);
    mig_excerpt(f->sql + st->start, st->len, excerpt);
    int line = st->line;
    const char *pos = res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) : NULL;
    if (pos) {
        size_t off = sql_char_to_byte(f->sql + st->start, st->len, atoi(pos));
        for (size_t i = 0; i < off; i++)
            line += f->sql[st->start + i] == '\n';
    }
    snprintf(err, errlen, "%s:%d: statement `%s` (line %d) failed: %s", f->path, line, excerpt,
             st->line, why);
}

/* Transaction control inside a file would break the one-transaction-per-file guarantee. */
static bool mig_is_txn_control(const char *s, size_t len)
{
    static const char *const words[] = {"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT"};
    size_t w = 0;
    while (w < len && isalpha((unsigned char)s[w]))
        w++;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i]) == w && !strncasecmp(s, words[i], w))
            return true;
    return false;
}

static int mig_check_statements(const mig_file_t *f, char *err, size_t errlen)
{
    size_t pos = 0;
    int line = 1;
    sql_stmt_t st;
    while (sql_next_statement(f->sql, f->len, &pos, &line, &st)) {
        if (mig_is_txn_control(f->sql + st.start, st.len)) {
            snprintf(err, errlen,
                     "%s:%d: transaction control in a migration; each file already runs in a "
                     "transaction of its own",
                     f->path, st.line);
            return -1;
        }
    }
    return 0;
}

static int mig_run_statements(PGconn *db, const mig_file_t *f, char *err, size_t errlen)
{
    size_t pos = 0;
    int line = 1;
    sql_stmt_t st;
    while (sql_next_statement(f->sql, f->len, &pos, &line, &st)) {
        char *text = strndup(f->sql + st.start, st.len);
        if (!text) {
            snprintf(err, errlen, "%s: out of memory", f->path);
            return -1;
        }
        PGresult *res = PQexec(db, text);
        free(text);
        ExecStatusType rs = PQresultStatus(res);
        if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
            mig_statement_error(db, res, f, &st, err, errlen);
            PQclear(res);
            return -1;
        }
        PQclear(res);
    }
    return 0;
}

static int mig_record(PGconn *db, const mig_file_t *f, char *err, size_t errlen)
{
    const char *params[] = {f->version, f->name, f->checksum};
    char why[ERRBUF_SIZE];
    if (db_exec(db,
                "INSERT INTO warren_migrations (version, filename, checksum) VALUES ($1, $2, $3)",
                3, params, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: recording it: %s", f->path, why);
        return -1;
    }
    return 0;
}

/* BEGIN; the file; its record; COMMIT. Any failure rolls all of it back. */
static int mig_apply(PGconn *db, const mig_file_t *f, char *err, size_t errlen)
{
    char why[ERRBUF_SIZE];
    if (mig_check_statements(f, err, errlen) != 0)
        return -1;
    if (db_exec(db, "BEGIN", 0, NULL, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: BEGIN: %s", f->path, why);
        return -1;
    }
    if (mig_run_statements(db, f, err, errlen) == 0 && mig_record(db, f, err, errlen) == 0) {
        if (db_exec(db, "COMMIT", 0, NULL, NULL, why, sizeof why) == 0)
            return 0;
        snprintf(err, errlen, "%s: COMMIT: %s", f->path, why);
    }
    PQclear(PQexec(db, "ROLLBACK"));
    return -1;
}

static int mig_lock(PGconn *db, FILE *out, char *err, size_t errlen)
{
    PGresult *res;
    if (db_exec(db, "SELECT pg_try_advisory_lock(" MIGRATE_LOCK_KEY ")", 0, NULL, &res, err,
                errlen) != 0)
        return -1;
    bool got = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (got)
        return 0;
    report(out, "waiting for another migration run to finish");
    return db_exec(db, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")", 0, NULL, NULL, err, errlen);
}

static void mig_unlock(PGconn *db)
{
    /* The lock is the session's; if this fails the connection is gone and so is the lock. */
    PQclear(PQexec(db, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")"));
}

/* ---- definitions: DIR/functions/NNN_*.sql, re-applied whole ---- */

static const char create_definitions_sql[] = "CREATE TABLE IF NOT EXISTS warren_definitions ("
                                             " filename text PRIMARY KEY,"
                                             " checksum text NOT NULL,"
                                             " applied_at timestamptz NOT NULL DEFAULT now())";

/* The recorded definition files (keyed by file name, as migrations are by version), and
 * whether a migration was applied after them. */
static int def_load_recorded(PGconn *db, mig_set_t *set, char *err, size_t errlen)
{
    if (mig_load_rows(db, "warren_definitions",
                      "SELECT filename, filename, checksum, " APPLIED_AT
                      " FROM warren_definitions ORDER BY filename",
                      set, err, errlen) != 0)
        return -1;
    if (!set->applied)
        return 0;
    PGresult *res;
    if (db_exec(db,
                "SELECT EXISTS (SELECT 1 FROM warren_migrations WHERE applied_at >= "
                "(SELECT min(applied_at) FROM warren_definitions))",
                0, NULL, &res, err, errlen) != 0)
        return -1;
    set->redo = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return 0;
}

/* The definition files of dir and their records; none when dir has no functions/ (a schema
 * from before them, which is then migrated as it was). */
static int def_load(PGconn *db, const char *dir, mig_set_t *set, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, DEFINITIONS_SUBDIR);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    if (mig_list(path, set, err, errlen) != 0 || mig_load(db, set, err, errlen) != 0)
        return -1;
    return def_load_recorded(db, set, err, errlen);
}

/* Applied before and unchanged since, with no migration after it. */
static bool def_current(const mig_set_t *set, const mig_file_t *f)
{
    int row = mig_applied_row(set, f->name);
    return !set->redo && row >= 0 && !strcmp(PQgetvalue(set->applied, row, 2), f->checksum);
}

/* The definition files to apply; when there is any, every file is applied again. */
static int def_pending(const mig_set_t *set)
{
    int pending = 0;
    for (size_t i = 0; i < set->n; i++)
        pending += !def_current(set, &set->files[i]);
    return pending;
}

/* The record: one row per file applied, none of the files gone. */
static int def_record(PGconn *db, const mig_set_t *set, char *err, size_t errlen)
{
    if (db_exec(db, create_definitions_sql, 0, NULL, NULL, err, errlen) != 0 ||
        db_exec(db, "DELETE FROM warren_definitions", 0, NULL, NULL, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < set->n; i++) {
        const char *params[] = {set->files[i].name, set->files[i].checksum};
        if (db_exec(db, "INSERT INTO warren_definitions (filename, checksum) VALUES ($1, $2)", 2,
                    params, NULL, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* BEGIN; every file in order; the record; COMMIT. Any failure rolls all of it back. */
static int def_apply(PGconn *db, const mig_set_t *set, char *err, size_t errlen)
{
    char why[ERRBUF_SIZE];
    for (size_t i = 0; i < set->n; i++)
        if (mig_check_statements(&set->files[i], err, errlen) != 0)
            return -1;
    if (db_exec(db, "BEGIN", 0, NULL, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "definitions: BEGIN: %s", why);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < set->n; i++)
        rc = mig_run_statements(db, &set->files[i], err, errlen);
    if (rc == 0 && def_record(db, set, why, sizeof why) != 0) {
        snprintf(err, errlen, "definitions: recording them: %s", why);
        rc = -1;
    }
    if (rc == 0) {
        if (db_exec(db, "COMMIT", 0, NULL, NULL, why, sizeof why) == 0)
            return 0;
        snprintf(err, errlen, "definitions: COMMIT: %s", why);
    }
    PQclear(PQexec(db, "ROLLBACK"));
    return -1;
}

/* With the lock held, after the migrations: every definition file again when one changed or a
 * migration came after them. The number of files applied, 0 when none needed it. */
static int def_run_locked(PGconn *db, const char *dir, FILE *out, char *err, size_t errlen)
{
    mig_set_t set = {0};
    int applied = 0;
    if (def_load(db, dir, &set, err, errlen) != 0) {
        applied = -1;
    } else if (def_pending(&set) > 0) {
        int64_t t0 = now_mono_ms();
        applied = def_apply(db, &set, err, errlen) == 0 ? (int)set.n : -1;
        if (applied > 0)
            report(out, "re-applied %d definition files from %s/%s (%lld ms)", applied, dir,
                   DEFINITIONS_SUBDIR, (long long)(now_mono_ms() - t0));
    }
    mig_set_free(&set);
    return applied;
}

/* Each definition file of dir as applied (with its time) or pending, to out. */
static void def_print(const mig_set_t *set, FILE *out)
{
    for (size_t i = 0; i < set->n; i++) {
        const mig_file_t *f = &set->files[i];
        char name[sizeof f->name + sizeof DEFINITIONS_SUBDIR + 1];
        snprintf(name, sizeof name, "%s/%s", DEFINITIONS_SUBDIR, f->name);
        int row = mig_applied_row(set, f->name);
        if (row < 0)
            fprintf(out, "%-40s pending\n", name);
        else
            fprintf(out, "%-40s applied %s%s\n", name, PQgetvalue(set->applied, row, 3),
                    def_current(set, f) ? "" : "  pending again (changed, or a migration since)");
    }
}

static const char create_table_sql[] = "CREATE TABLE IF NOT EXISTS warren_migrations ("
                                       " version text PRIMARY KEY,"
                                       " filename text NOT NULL,"
                                       " checksum text NOT NULL,"
                                       " applied_at timestamptz NOT NULL DEFAULT now())";

/* With the lock held: load, verify, apply what is pending. */
static int mig_run_locked(PGconn *db, const char *dir, FILE *out, char *err, size_t errlen)
{
    mig_set_t set = {0};
    int applied = 0;
    if (db_exec(db, create_table_sql, 0, NULL, NULL, err, errlen) != 0 ||
        mig_list(dir, &set, err, errlen) != 0 || mig_load_superseded(dir, &set, err, errlen) != 0 ||
        mig_load(db, &set, err, errlen) != 0 || mig_load_applied(db, &set, err, errlen) != 0 ||
        mig_verify(&set, err, errlen) != 0) {
        mig_set_free(&set);
        return -1;
    }
    mig_warn_orphans(&set, dir);
    for (size_t i = 0; i < set.n; i++) {
        const mig_file_t *f = &set.files[i];
        if (mig_applied_row(&set, f->version) >= 0)
            continue;
        int64_t t0 = now_mono_ms();
        if (mig_apply(db, f, err, errlen) != 0) {
            applied = -1;
            break;
        }
        report(out, "applied %s (%lld ms)", f->name, (long long)(now_mono_ms() - t0));
        applied++;
    }
    mig_set_free(&set);
    return applied;
}

int db_migrate(PGconn *db, const char *dir, FILE *out, int *definitions, char *err, size_t errlen)
{
    if (!dir)
        dir = db_schema_dir();
    if (mig_lock(db, out, err, errlen) != 0)
        return -1;
    int applied = mig_run_locked(db, dir, out, err, errlen);
    int defs = applied < 0 ? 0 : def_run_locked(db, dir, out, err, errlen);
    mig_unlock(db);
    if (definitions)
        *definitions = defs < 0 ? 0 : defs;
    return defs < 0 ? -1 : applied;
}

/* The files in dir and the rows of warren_migrations, read without the lock: changes nothing. */
static int mig_status_load(PGconn *db, const char *dir, mig_set_t *set, char *err, size_t errlen)
{
    if (mig_list(dir, set, err, errlen) != 0 || mig_load_superseded(dir, set, err, errlen) != 0 ||
        mig_load(db, set, err, errlen) != 0 || mig_load_applied(db, set, err, errlen) != 0)
        return -1;
    return 0;
}

/* Files of a loaded set not applied yet; -1 when an applied file changed since (named in err). */
static int mig_count_pending(const mig_set_t *set, char *err, size_t errlen)
{
    if (mig_verify(set, err, errlen) != 0)
        return -1;
    int pending = 0;
    for (size_t i = 0; i < set->n; i++)
        pending += mig_applied_row(set, set->files[i].version) < 0;
    return pending;
}

/* The definition files of dir to apply, -1 on failure. */
static int def_count_pending(PGconn *db, const char *dir, FILE *out, char *err, size_t errlen)
{
    mig_set_t defs = {0};
    int pending = -1;
    if (def_load(db, dir, &defs, err, errlen) == 0) {
        pending = def_pending(&defs);
        if (out)
            def_print(&defs, out);
    }
    mig_set_free(&defs);
    return pending;
}

int db_migrate_pending(PGconn *db, const char *dir, char *err, size_t errlen)
{
    if (!dir)
        dir = db_schema_dir();
    mig_set_t set = {0};
    int pending = -1;
    if (mig_status_load(db, dir, &set, err, errlen) == 0)
        pending = mig_count_pending(&set, err, errlen);
    mig_set_free(&set);
    int defs = pending < 0 ? 0 : def_count_pending(db, dir, NULL, err, errlen);
    return defs < 0 ? -1 : pending + defs;
}

int db_migrate_status(PGconn *db, const char *dir, FILE *out, char *err, size_t errlen)
{
    if (!dir)
        dir = db_schema_dir();
    mig_set_t set = {0};
    if (mig_status_load(db, dir, &set, err, errlen) != 0) {
        mig_set_free(&set);
        return -1;
    }
    for (size_t i = 0; i < set.n; i++) {
        const mig_file_t *f = &set.files[i];
        int row = mig_applied_row(&set, f->version);
        if (row < 0)
            fprintf(out, "%-40s pending\n", f->name);
        else
            fprintf(out, "%-40s applied %s%s\n", f->name, PQgetvalue(set.applied, row, 3),
                    mig_changed(&set, f, row) ? "  CHANGED since applied" : "");
    }
    int rows = set.applied ? PQntuples(set.applied) : 0;
    for (int r = 0; r < rows; r++)
        if (mig_is_orphan(&set, r))
            fprintf(out, "%-40s applied %s  NO FILE in %s\n", PQgetvalue(set.applied, r, 1),
                    PQgetvalue(set.applied, r, 3), dir);
    int pending = mig_count_pending(&set, err, errlen);
    mig_set_free(&set);
    int defs = pending < 0 ? 0 : def_count_pending(db, dir, out, err, errlen);
    return defs < 0 ? -1 : pending + defs;
}
