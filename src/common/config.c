/* Configuration loading: defaults, then the libconfig file, then WARREN__* environment, all
 * driven by the key table; bad input is an error naming the file, line and key, never a default. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/config_table.h"
#include "warren/config.h"
#include "warren/paths.h"
#include "warren/retry.h"

extern char **environ;

_Static_assert(sizeof(((warren_config_t *)0)->source) >= CFG_KEYS_MAX, "source array too small");

static void *field(warren_config_t *cfg, const cfg_key_t *k)
{
    return (char *)cfg + k->offset;
}

static const cfg_key_t *find_key(const char *path, size_t *index)
{
    for (size_t i = 0; i < cfg_table_len; i++)
        if (!strcmp(cfg_table[i].path, path)) {
            if (index)
                *index = i;
            return &cfg_table[i];
        }
    return NULL;
}

/* True when some key lives below `prefix` (a group in the file). */
static bool is_group(const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < cfg_table_len; i++)
        if (!strncmp(cfg_table[i].path, prefix, n) && cfg_table[i].path[n] == '.')
            return true;
    return false;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int set_string(warren_config_t *cfg, const cfg_key_t *k, const char *value)
{
    char **slot = field(cfg, k);
    char *copy = strdup(value);
    if (!copy)
        return -1;
    free(*slot);
    *slot = copy;
    return 0;
}

/* Check v against the key's bounds and store it in a field of the key's width. */
static int set_int(warren_config_t *cfg, const cfg_key_t *k, long long v, char *why, size_t whylen)
{
    if (v < k->min || v > k->max)
        return fail(why, whylen, "%lld is out of bounds [%lld, %lld]", v, k->min, k->max);
    if (k->size == sizeof(int64_t))
        *(int64_t *)field(cfg, k) = v;
    else
        *(int *)field(cfg, k) = (int)v;
    return 0;
}

static long long get_int(const warren_config_t *cfg, const cfg_key_t *k)
{
    const void *p = (const char *)cfg + k->offset;
    return k->size == sizeof(int64_t) ? *(const int64_t *)p : *(const int *)p;
}

static int enum_index(const cfg_key_t *k, const char *s)
{
    for (int i = 0; k->choices[i]; i++)
        if (!strcmp(k->choices[i], s))
            return i;
    return -1;
}

static void choices_text(const cfg_key_t *k, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; k->choices[i] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "|" : "", k->choices[i]);
}

/* Parse a textual value (defaults and environment) into the field; why gets the problem. */
static int set_from_text(warren_config_t *cfg, const cfg_key_t *k, const char *text, char *why,
                         size_t whylen)
{
    switch (k->type) {
    case CT_STRING:
    case CT_ACTIONS:
        if (k->check && k->check(text, why, whylen) != 0)
            return -1;
        return set_string(cfg, k, text) == 0 ? 0 : fail(why, whylen, "out of memory");
    case CT_INT: {
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno == ERANGE)
            return fail(why, whylen, "%s does not fit in 64 bits", text);
        if (errno || end == text || *end)
            return fail(why, whylen, "expected an integer, got '%s'", text);
        return set_int(cfg, k, v, why, whylen);
    }
    case CT_BOOL: {
        static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0",
                                                                                    "no", "off"};
        for (size_t i = 0; i < 4; i++) {
            if (!strcasecmp(text, yes[i]) || !strcasecmp(text, no[i])) {
                *(bool *)field(cfg, k) = !strcasecmp(text, yes[i]);
                return 0;
            }
        }
        return fail(why, whylen, "expected true or false, got '%s'", text);
    }
    case CT_ENUM: {
        int i = enum_index(k, text);
        if (i < 0) {
            char c[128];
            choices_text(k, c, sizeof c);
            return fail(why, whylen, "expected one of %s, got '%s'", c, text);
        }
        *(int *)field(cfg, k) = i;
        return 0;
    }
    }
    return -1;
}

static const char *setting_type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a float";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array";
    case CONFIG_TYPE_LIST: return "a list";
    default: return "an unknown type";
    }
}

static const char *key_type_name(cfg_type_t t)
{
    switch (t) {
    case CT_STRING: return "a string";
    case CT_INT: return "an integer";
    case CT_BOOL: return "a boolean (true/false)";
    case CT_ENUM: return "a string";
    case CT_ACTIONS: return "a list of { action = \"NAME\"; retry = { ... }; } groups";
    }
    return "?";
}

/* Apply one scalar setting from the file. */
static int apply_setting(warren_config_t *cfg, const cfg_key_t *k, const config_setting_t *s,
                         char *why, size_t whylen)
{
    int type = config_setting_type(s);
    bool ok = (k->type == CT_INT && (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64)) ||
              (k->type == CT_BOOL && type == CONFIG_TYPE_BOOL) ||
              ((CT_IS_TEXT(k->type) || k->type == CT_ENUM) && type == CONFIG_TYPE_STRING);
    if (!ok)
        return fail(why, whylen, "expected %s, got %s", key_type_name(k->type),
                    setting_type_name(type));
    switch (k->type) {
    case CT_INT: return set_int(cfg, k, config_setting_get_int64(s), why, whylen);
    case CT_BOOL: *(bool *)field(cfg, k) = config_setting_get_bool(s); return 0;
    default: return set_from_text(cfg, k, config_setting_get_string(s), why, whylen);
    }
}

/* One field of an action's retry group as text: an integer, a string, or (retry_on,
 * never_retry) an array of strings joined by commas. -1 with why. */
static int field_text(const config_setting_t *f, char *buf, size_t len, char *why, size_t whylen)
{
    int type = config_setting_type(f);
    if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) {
        snprintf(buf, len, "%lld", config_setting_get_int64(f));
        return 0;
    }
    if (type == CONFIG_TYPE_STRING) {
        const char *v = config_setting_get_string(f);
        if (!v)
            v = "";
        if (strpbrk(v, " \t\n;:"))
            return fail(why, whylen, "'%.64s' holds a space, ';' or ':'", v);
        snprintf(buf, len, "%s", v);
        return strlen(v) < len ? 0 : fail(why, whylen, "longer than %zu characters", len - 1);
    }
    if (type == CONFIG_TYPE_ARRAY || type == CONFIG_TYPE_LIST) {
        size_t o = 0;
        buf[0] = '\0';
        for (int i = 0; i < config_setting_length(f); i++) {
            const config_setting_t *e = config_setting_get_elem(f, (unsigned)i);
            if (config_setting_type(e) != CONFIG_TYPE_STRING)
                return fail(why, whylen, "expected strings in the list, got %s",
                            setting_type_name(config_setting_type(e)));
            const char *v = config_setting_get_string(e);
            if (!v)
                v = "";
            if (strpbrk(v, " \t\n;:,"))
                return fail(why, whylen, "'%.64s' holds a space or one of ';:,'", v);
            o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", v);
            if (o >= len)
                return fail(why, whylen, "longer than %zu characters", len - 1);
        }
        return 0;
    }
    return fail(why, whylen, "expected an integer, a string or a list of strings, got %s",
                setting_type_name(type));
}

/* The file form of a CT_ACTIONS key, a list of { action = "NAME"; retry = { ... }; }, into its
 * text form; each error names the line and the element's path. */
static int actions_from_list(warren_config_t *cfg, const cfg_key_t *k, const config_setting_t *s,
                             const char *file, const char *path, char *err, size_t errlen)
{
    size_t cap = 1024, o = 0;
    char *text = malloc(cap), why[256];
    if (!text)
        return fail(err, errlen, "out of memory");
    text[0] = '\0';
    for (int i = 0; i < config_setting_length(s); i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        int line = (int)config_setting_source_line(e);
        const char *action = NULL;
        const config_setting_t *retry = NULL, *queue_timeout = NULL;
        if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
            free(text);
            return fail(err, errlen, "%s:%d: %s.[%d]: expected a group, got %s", file, line, path,
                        i, setting_type_name(config_setting_type(e)));
        }
        for (int j = 0; j < config_setting_length(e); j++) {
            const config_setting_t *m = config_setting_get_elem(e, (unsigned)j);
            const char *name = config_setting_name(m);
            int mline = (int)config_setting_source_line(m);
            if (name && !strcmp(name, "action") && config_setting_type(m) == CONFIG_TYPE_STRING) {
                action = config_setting_get_string(m);
            } else if (name && !strcmp(name, "retry") &&
                       config_setting_type(m) == CONFIG_TYPE_GROUP) {
                retry = m;
            } else if (name && !strcmp(name, "queue_timeout_s")) {
                queue_timeout = m;
            } else {
                free(text);
                return fail(err, errlen,
                            "%s:%d: %s.[%d].%s: unknown key (an element has action = \"NAME\", "
                            "retry = { ... } and queue_timeout_s = N)",
                            file, mline, path, i, name ? name : "?");
            }
        }
        if (!action) {
            free(text);
            return fail(err, errlen, "%s:%d: %s.[%d]: no action = \"NAME\"", file, line, path, i);
        }
        char entry[2048];
        size_t n = (size_t)snprintf(entry, sizeof entry, "%s:", action);
        retry_policy_t scratch;
        retry_policy_default(&scratch);
        int nf = retry ? config_setting_length(retry) : 0;
        for (int j = 0; j < nf + (queue_timeout != NULL); j++) {
            const config_setting_t *f = j < nf ? config_setting_get_elem(retry, (unsigned)j)
                                               : queue_timeout;
            const char *name = config_setting_name(f);
            int fline = (int)config_setting_source_line(f);
            char value[600];
            if (field_text(f, value, sizeof value, why, sizeof why) != 0 ||
                retry_policy_set(&scratch, name ? name : "?", value, why, sizeof why) != 0) {
                free(text);
                return fail(err, errlen, "%s:%d: %s.[%d]%s: %s", file, fline, path, i,
                            j < nf ? ".retry" : "", why);
            }
            n += (size_t)snprintf(entry + n, n < sizeof entry ? sizeof entry - n : 0, " %s=%s",
                                  name, value);
        }
        if (n >= sizeof entry || (k->check && k->check(entry, why, sizeof why) != 0)) {
            free(text);
            return fail(err, errlen, "%s:%d: %s.[%d]: %s", file, line, path, i,
                        n >= sizeof entry ? "too long" : why);
        }
        if (o + n + 3 > cap) {
            char *bigger = realloc(text, cap = 2 * (o + n + 3));
            if (!bigger) {
                free(text);
                return fail(err, errlen, "out of memory");
            }
            text = bigger;
        }
        o += (size_t)sprintf(text + o, "%s%s", o ? "; " : "", entry);
    }
    int rc = set_string(cfg, k, text);
    free(text);
    return rc == 0 ? 0 : fail(err, errlen, "out of memory");
}

/* Walk a group of the file: every leaf must be a known key of the right type. */
static int apply_group(warren_config_t *cfg, const config_setting_t *group, const char *prefix,
                       const char *file, char *err, size_t errlen)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        char path[256], why[256];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", name ? name : "?");
        int line = (int)config_setting_source_line(s);
        size_t idx;
        const cfg_key_t *k = find_key(path, &idx);
        if (config_setting_type(s) == CONFIG_TYPE_GROUP) {
            if (k)
                return fail(err, errlen, "%s:%d: %s: expected %s, got a group", file, line, path,
                            key_type_name(k->type));
            if (!is_group(path))
                return fail(err, errlen, "%s:%d: %s: unknown key", file, line, path);
            if (apply_group(cfg, s, path, file, err, errlen))
                return -1;
            continue;
        }
        if (!k)
            return fail(err, errlen, "%s:%d: %s: unknown key%s", file, line, path,
                        is_group(path) ? " (it is a group of settings)" : "");
        if (k->type == CT_ACTIONS && config_setting_type(s) == CONFIG_TYPE_LIST) {
            if (actions_from_list(cfg, k, s, file, path, err, errlen))
                return -1;
            cfg->source[idx] = CFG_SRC_FILE;
            continue;
        }
        if (apply_setting(cfg, k, s, why, sizeof why))
            return fail(err, errlen, "%s:%d: %s: %s", file, line, path, why);
        cfg->source[idx] = CFG_SRC_FILE;
    }
    return 0;
}

#define CFG_FILE_MAX (1 << 20)

/* 1-based line of position p in text. */
static int line_at(const char *text, const char *p)
{
    int line = 1;
    for (; text < p; text++)
        line += *text == '\n';
    return line;
}

/* Characters that continue a setting name or a number in libconfig's grammar. */
static bool word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '*' || c == '.';
}

/* Length of the number at p: sign, digits, letters (hex digits, suffix, exponent), dots. */
static size_t number_len(const char *p)
{
    size_t n = *p == '-' || *p == '+';
    while (isalnum((unsigned char)p[n]) || p[n] == '.' ||
           ((p[n] == '-' || p[n] == '+') && (p[n - 1] == 'e' || p[n - 1] == 'E')))
        n++;
    return n;
}

/* 1 when p[0..n) is an integer literal without a suffix, 0 when it is something else (a float,
 * a suffixed or malformed number), -1 when it is an integer beyond 64 bits. */
static int plain_integer(const char *p, size_t n)
{
    bool hex = n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    size_t start = hex ? 2 : (size_t)(*p == '-' || *p == '+');
    const char *digits = hex ? "0123456789abcdefABCDEF" : "0123456789";
    if (n == start)
        return 0;
    for (size_t j = start; j < n; j++)
        if (!strchr(digits, p[j]))
            return 0;
    char lit[80];
    if (n >= sizeof lit)
        return -1;
    memcpy(lit, p, n);
    lit[n] = '\0';
    errno = 0;
    if (hex) {
        unsigned long long u = strtoull(lit + 2, NULL, 16);
        return errno == ERANGE || u > INT64_MAX ? -1 : 1;
    }
    (void)strtoll(lit, NULL, 10);
    return errno == ERANGE ? -1 : 1;
}

/*
 * libconfig 1.5 reads an integer literal without an L suffix into an int, wrapping silently at
 * 2^31 (batch_size = 4294967396 becomes 100). Here every integer literal gets the suffix, so the
 * library keeps all 64 bits and the bounds check sees the value as written; one beyond 64 bits
 * is an error. Strings and comments are copied as they are, and lines do not move, so libconfig's
 * line numbers stay right. @include is refused: the included file would escape this.
 * Returns malloc'd text, or NULL with the problem in err.
 */
static char *widen_integers(const char *in, size_t len, const char *file, char *err, size_t errlen)
{
    char *out = malloc(2 * len + 1);
    if (!out) {
        fail(err, errlen, "%s: out of memory", file);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        const char *p = in + i;
        size_t n = 1;
        if (*p == '"') {
            while (i + n < len && p[n] != '"')
                n += p[n] == '\\' && i + n + 1 < len ? 2 : 1;
            n += i + n < len;
        } else if (*p == '#' || (*p == '/' && p[1] == '/')) {
            n = strcspn(p, "\n");
        } else if (*p == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            n = end ? (size_t)(end + 2 - p) : len - i;
        } else if (!strncmp(p, "@include", 8)) {
            fail(err, errlen,
                 "%s:%d: @include is not supported: keep the configuration in one file", file,
                 line_at(in, p));
            free(out);
            return NULL;
        } else if ((isdigit((unsigned char)*p) ||
                    ((*p == '-' || *p == '+') && isdigit((unsigned char)p[1]))) &&
                   (i == 0 || !word_char(p[-1]))) {
            n = number_len(p);
            int kind = plain_integer(p, n);
            if (kind < 0) {
                fail(err, errlen, "%s:%d: %.*s does not fit in 64 bits", file, line_at(in, p),
                     (int)(n > 40 ? 40 : n), p);
                free(out);
                return NULL;
            }
            memcpy(out + o, p, n);
            o += n;
            if (kind == 1)
                out[o++] = 'L';
            i += n;
            continue;
        }
        memcpy(out + o, p, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return out;
}

/* The whole file as a C string; NULL with the problem in err (named by file, as every error). */
static char *read_text(const char *file, size_t *len, char *err, size_t errlen)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fail(err, errlen, "%s: cannot read: %s", file, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        fail(err, errlen, "%s: is a directory, not a configuration file", file);
        return NULL;
    }
    char *buf = malloc(CFG_FILE_MAX + 1);
    size_t n = 0;
    ssize_t r = 1;
    while (buf && n <= CFG_FILE_MAX && (r = read(fd, buf + n, CFG_FILE_MAX + 1 - n)) > 0)
        n += (size_t)r;
    int read_errno = errno;
    close(fd);
    if (!buf || r < 0 || n > CFG_FILE_MAX) {
        if (!buf)
            fail(err, errlen, "%s: out of memory", file);
        else if (r < 0)
            fail(err, errlen, "%s: cannot read: %s", file, strerror(read_errno));
        else
            fail(err, errlen, "%s: larger than %d bytes; not a configuration file", file,
                 CFG_FILE_MAX);
        free(buf);
        return NULL;
    }
    const char *nul = memchr(buf, '\0', n);
    if (nul) {
        fail(err, errlen, "%s:%d: NUL byte; not a text file", file, line_at(buf, nul));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int load_file(warren_config_t *cfg, const char *file, char *err, size_t errlen)
{
    size_t len;
    char *raw = read_text(file, &len, err, errlen);
    if (!raw)
        return -1;
    char *text = widen_integers(raw, len, file, err, errlen);
    free(raw);
    if (!text)
        return -1;
    config_t lc;
    config_init(&lc);
    int rc = config_read_string(&lc, text);
    free(text);
    if (rc != CONFIG_TRUE) {
        fail(err, errlen, "%s:%d: malformed file: %s", file, config_error_line(&lc),
             config_error_text(&lc));
        config_destroy(&lc);
        return -1;
    }
    rc = apply_group(cfg, config_root_setting(&lc), "", file, err, errlen);
    config_destroy(&lc);
    return rc;
}

/* Wiped before it is freed: the URLs in it hold passwords. */
static void free_env(char **env)
{
    for (char **e = env; e && *e; e++) {
        explicit_bzero(*e, strlen(*e));
        free(*e);
    }
    free(env);
}

/* The WARREN__* entries of env, copied (NULL-terminated); NULL when out of memory. */
static char **copy_env(char *const *env)
{
    size_t n = 0;
    for (char *const *e = env; *e; e++)
        n += !strncmp(*e, "WARREN__", 8);
    char **copy = calloc(n + 1, sizeof *copy);
    size_t k = 0;
    for (char *const *e = env; copy && *e; e++)
        if (!strncmp(*e, "WARREN__", 8) && !(copy[k++] = strdup(*e))) {
            free_env(copy);
            return NULL;
        }
    return copy;
}

static int load_env(warren_config_t *cfg, char *err, size_t errlen)
{
    for (char **e = cfg->env; *e; e++) {
        if (strncmp(*e, "WARREN__", 8))
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t namelen = (size_t)(eq - *e);
        bool known = false;
        for (size_t i = 0; i < cfg_table_len && !known; i++) {
            char name[160], why[256];
            cfg_env_name(cfg_table[i].path, name, sizeof name);
            if (strlen(name) != namelen || strncmp(name, *e, namelen))
                continue;
            known = true;
            if (set_from_text(cfg, &cfg_table[i], eq + 1, why, sizeof why))
                return fail(err, errlen, "environment %s (key %s): %s", name, cfg_table[i].path,
                            why);
            cfg->source[i] = CFG_SRC_ENV;
        }
        if (!known)
            return fail(err, errlen,
                        "environment %.*s: unknown key (WARREN__ + path with dots as __)",
                        (int)namelen, *e);
    }
    return 0;
}

/* Empty paths stand for the files shipped with the binary (warren/paths.h). */
static int locate_files(warren_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->worker.handlers_dir && *cfg->worker.handlers_dir)
        return 0;
    char *dir = strdup(paths_handlers_dir());
    if (!dir)
        return fail(err, errlen, "out of memory");
    free(cfg->worker.handlers_dir);
    cfg->worker.handlers_dir = dir;
    return 0;
}

/* cfg_load with the environment env (the process's at start, the same copy on a reload). */
static int load(warren_config_t *cfg, const char *path, char *const *env, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < cfg_table_len; i++) {
        char why[256];
        if (set_from_text(cfg, &cfg_table[i], cfg_table[i].def, why, sizeof why))
            return fail(err, errlen, "built-in default of %s: %s", cfg_table[i].path, why);
    }
    if (cfg_table_len > CFG_KEYS_MAX)
        return fail(err, errlen, "the key table has more than CFG_KEYS_MAX rows");
    if (!path || !*path)
        path = getenv("WARREN_CONFIG");
    if (path && *path && !(cfg->file = strdup(path)))
        return fail(err, errlen, "out of memory");
    if (path && *path && load_file(cfg, path, err, errlen))
        return -1;
    if (!(cfg->env = copy_env(env)))
        return fail(err, errlen, "out of memory");
    if (load_env(cfg, err, errlen))
        return -1;
    return locate_files(cfg, err, errlen);
}

int cfg_load(warren_config_t *cfg, const char *path, char *err, size_t errlen)
{
    return load(cfg, path, environ, err, errlen);
}

void cfg_free(warren_config_t *cfg)
{
    for (size_t i = 0; i < cfg_table_len; i++)
        if (CT_IS_TEXT(cfg_table[i].type)) {
            char **slot = field(cfg, &cfg_table[i]);
            free(*slot);
            *slot = NULL;
        }
    free(cfg->file);
    cfg->file = NULL;
    free_env(cfg->env);
    cfg->env = NULL;
}

static bool same_value(const warren_config_t *a, const warren_config_t *b, const cfg_key_t *k)
{
    const void *pa = (const char *)a + k->offset, *pb = (const char *)b + k->offset;
    switch (k->type) {
    case CT_STRING:
    case CT_ACTIONS: {
        const char *sa = *(char *const *)pa, *sb = *(char *const *)pb;
        return !strcmp(sa ? sa : "", sb ? sb : "");
    }
    case CT_INT: return get_int(a, k) == get_int(b, k);
    case CT_BOOL: return *(const bool *)pa == *(const bool *)pb;
    case CT_ENUM: return *(const int *)pa == *(const int *)pb;
    }
    return false;
}

void cfg_diff(const warren_config_t *running, const warren_config_t *loaded, cfg_diff_t *d)
{
    d->n_reload = d->n_restart = 0;
    for (size_t i = 0; i < cfg_table_len && i < CFG_KEYS_MAX; i++) {
        const cfg_key_t *k = &cfg_table[i];
        if (same_value(running, loaded, k))
            continue;
        if (k->reloadable)
            d->reload[d->n_reload++] = k->path;
        else
            d->restart[d->n_restart++] = k->path;
    }
}

bool cfg_diff_reloads(const cfg_diff_t *d, const char *key)
{
    for (size_t i = 0; i < d->n_reload; i++)
        if (!strcmp(d->reload[i], key))
            return true;
    return false;
}

bool cfg_reloadable(const char *key)
{
    const cfg_key_t *k = find_key(key, NULL);
    return k && k->reloadable;
}

void cfg_keys_text(const char *const *keys, size_t n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", keys[i]);
        if (w < 0 || (size_t)w >= len - o) {
            if (len > 4)
                memcpy(buf + len - 4, "...", 4);
            return;
        }
        o += (size_t)w;
    }
}

int cfg_reload_load(const warren_config_t *cfg, warren_config_t *loaded, cfg_diff_t *d, char *err,
                    size_t errlen)
{
    if (load(loaded, cfg->file, cfg->env, err, errlen) != 0)
        return -1;
    cfg_diff(cfg, loaded, d);
    return 0;
}

/* Swapping strings needs no allocation, so this cannot fail half-way. */
void cfg_reload_take(warren_config_t *cfg, warren_config_t *loaded)
{
    for (size_t i = 0; i < cfg_table_len; i++) {
        const cfg_key_t *k = &cfg_table[i];
        if (!k->reloadable)
            continue;
        char tmp[sizeof(int64_t)];
        memcpy(tmp, field(cfg, k), k->size);
        memcpy(field(cfg, k), field(loaded, k), k->size);
        memcpy(field(loaded, k), tmp, k->size);
        cfg->source[i] = loaded->source[i];
    }
}

int cfg_reload(warren_config_t *cfg, cfg_diff_t *d, char *err, size_t errlen)
{
    warren_config_t loaded;
    int rc = cfg_reload_load(cfg, &loaded, d, err, errlen);
    if (rc == 0)
        cfg_reload_take(cfg, &loaded);
    cfg_free(&loaded);
    /* cfg_free() frees every text key by walking cfg_table, whose length clang-tidy cannot see:
     * NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
    return rc;
}

cfg_source_t cfg_source(const warren_config_t *cfg, const char *key)
{
    size_t idx;
    return find_key(key, &idx) ? (cfg_source_t)cfg->source[idx] : CFG_SRC_DEFAULT;
}

/* True for a parameter name that carries a secret: password, sslpassword, passwd, ... Percent
 * escapes are decoded first, since libpq decodes them too. */
static bool secret_name(const char *k, size_t n)
{
    char name[64];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m + 1 >= sizeof name)
            return true; /* an absurdly long name: mask rather than guess */
        if (k[i] == '%' && i + 2 < n && isxdigit((unsigned char)k[i + 1]) &&
            isxdigit((unsigned char)k[i + 2])) {
            char hex[3] = {k[i + 1], k[i + 2], '\0'};
            name[m++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            name[m++] = (char)tolower((unsigned char)k[i]);
        }
    }
    name[m] = '\0';
    return strstr(name, "pass") || strstr(name, "secret") || strstr(name, "token");
}

/* Copy the URL query at q ("?a=1&password=x#f"), masking the values of secret parameters. */
static size_t mask_query(const char *q, char *out)
{
    size_t o = 0;
    while (*q && *q != '#') {
        size_t n = strcspn(q, "&;#");
        const char *eq = memchr(q, '=', n);
        if (eq && secret_name(q, (size_t)(eq - q))) {
            size_t head = (size_t)(eq + 1 - q);
            memcpy(out + o, q, head);
            /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): the strcpy below ends it */
            memcpy(out + o + head, "****", 4);
            o += head + 4;
        } else {
            memcpy(out + o, q, n);
            o += n;
        }
        q += n;
        if (*q == '&' || *q == ';')
            out[o++] = *q++;
    }
    /* NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.strcpy): out is sized by cfg_mask_url */
    strcpy(out + o, q);
    return o + strlen(q);
}

/* libpq "key=value key='quoted value'" text, masking the values of secret keywords. */
static void mask_conninfo(const char *s, char *out)
{
    size_t o = 0;
    while (*s) {
        size_t sp = strspn(s, " \t\r\n");
        memcpy(out + o, s, sp);
        o += sp;
        s += sp;
        size_t kn = strcspn(s, "= \t\r\n");
        const char *v = s + kn + strspn(s + kn, " \t\r\n");
        if (*v != '=') { /* not key=value: copy the word */
            memcpy(out + o, s, kn);
            o += kn;
            s += kn;
            continue;
        }
        v++;
        v += strspn(v, " \t\r\n");
        /* A value ends at an unescaped closing quote, or unquoted at unescaped whitespace. */
        bool quoted = *v == '\'';
        const char *end = v + quoted;
        while (*end && (quoted ? *end != '\'' : !strchr(" \t\r\n", *end)))
            end += *end == '\\' && end[1] ? 2 : 1;
        end += quoted && *end == '\'';
        bool secret = secret_name(s, kn);
        size_t head = (size_t)((secret ? v : end) - s);
        memcpy(out + o, s, head);
        o += head;
        if (secret) {
            memcpy(out + o, "****", 4);
            o += 4;
        }
        s = end;
    }
    out[o] = '\0';
}

char *cfg_mask_url(const char *url)
{
    /* Every masked piece turns into 4 characters, and pieces are at least 1 apart. */
    size_t len = strlen(url);
    char *out = malloc(5 * len + 16);
    if (!out)
        return NULL;
    const char *scheme = strstr(url, "://");
    if (!scheme || scheme == url ||
        strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789+.-") != (size_t)(scheme - url)) {
        mask_conninfo(url, out);
        return out;
    }
    /* The user information ends at the last '@' before the path. Without one there, at the
     * last '@' anywhere: a password with a raw '/', '?' or '#' is malformed but must not escape
     * (this masks too much when only the path or query has an '@'). Its ':' starts the password. */
    const char *auth = scheme + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memrchr(auth, '@', alen);
    if (!at)
        at = strrchr(auth, '@');
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    const char *rest = url;
    size_t o = 0;
    if (colon && !memchr(auth, '/', (size_t)(colon - auth))) {
        o = (size_t)(colon + 1 - url);
        memcpy(out, url, o);
        memcpy(out + o, "****", 4);
        o += 4;
        rest = at;
    }
    const char *q = strchr(rest, '?');
    size_t head = q ? (size_t)(q - rest) : strlen(rest);
    memcpy(out + o, rest, head);
    o += head;
    if (q)
        o += mask_query(q, out + o);
    out[o] = '\0';
    return out;
}

char *cfg_mask_message(const char *msg, const char *url)
{
    char *masked = url && *url ? cfg_mask_url(url) : NULL;
    size_t ulen = masked ? strlen(url) : 0, mlen = masked ? strlen(masked) : 0;
    /* Quoted fragments at most double; each copy of the URL becomes its masked form. */
    size_t len = strlen(msg), cap = 2 * len + 16 + (ulen ? (len / ulen + 1) * mlen : 0);
    char *out = malloc(cap);
    if (!out || (url && *url && !masked)) {
        free(out);
        free(masked);
        return NULL;
    }
    size_t o = 0;
    for (const char *p = msg; *p;) {
        if (masked && !strncmp(p, url, ulen)) {
            memcpy(out + o, masked, mlen);
            o += mlen;
            p += ulen;
            continue;
        }
        const char *close = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (masked && close && close > p + 1) {
            size_t n = (size_t)(close - p - 1);
            char *frag = strndup(p + 1, n);
            bool hide = frag && strstr(url, frag) && !strstr(masked, frag);
            free(frag);
            if (hide) {
                memcpy(out + o, "\"****\"", 6);
                o += 6;
                p = close + 1;
                continue;
            }
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
    free(masked);
    return out;
}

/* Effective value of a key as text (secrets masked); caller frees. */
static char *value_text(const warren_config_t *cfg, const cfg_key_t *k, bool mask)
{
    char buf[64];
    const void *p = (const char *)cfg + k->offset;
    switch (k->type) {
    case CT_STRING:
    case CT_ACTIONS: {
        const char *s = *(char *const *)p ? *(char *const *)p : "";
        if (mask && k->opaque)
            return strdup(*s ? "****" : "");
        if (mask && k->secret) /* a URL or key=value string shows all but its passwords */
            return strstr(s, "://") || strchr(s, '=') ? cfg_mask_url(s) : strdup(*s ? "****" : "");
        return strdup(s);
    }
    case CT_INT: snprintf(buf, sizeof buf, "%lld", get_int(cfg, k)); return strdup(buf);
    case CT_BOOL: return strdup(*(const bool *)p ? "true" : "false");
    case CT_ENUM: return strdup(k->choices[*(const int *)p]);
    }
    return strdup("?");
}

void cfg_print(const warren_config_t *cfg, FILE *out)
{
    static const char *const src_names[] = {"default", "file", "env"};
    for (size_t i = 0; i < cfg_table_len; i++) {
        char *v = value_text(cfg, &cfg_table[i], true);
        const char *quote = CT_IS_TEXT(cfg_table[i].type) || cfg_table[i].type == CT_ENUM ? "\""
                                                                                          : "";
        char src[200];
        if (cfg->source[i] == CFG_SRC_ENV) {
            char name[160];
            cfg_env_name(cfg_table[i].path, name, sizeof name);
            snprintf(src, sizeof src, "env %s", name);
        } else {
            snprintf(src, sizeof src, "%s", src_names[cfg->source[i]]);
        }
        fprintf(out, "%-46s = %s%s%s  # %s\n", cfg_table[i].path, quote, v ? v : "?", quote, src);
        free(v);
    }
}

void cfg_write_docs(FILE *out)
{
    fprintf(out,
            "# Configuration reference\n\n"
            "Generated from the key table in `src/common/config_table.c` by `warren config docs`;\n"
            "do not edit by hand (a test compares this file with the generated text).\n\n"
            "warren reads a libconfig file given by `-c FILE` or `WARREN_CONFIG` (see "
            "`conf/warren.conf`),\nthen environment variables: every key can be overridden by "
            "`WARREN__` + the key path\nupper-cased with dots written as `__`, e.g. "
            "`WARREN__MESSAGE_QUEUE__RABBITMQ__URL`.\n"
            "An unknown key, a wrong type, a value out of bounds or a malformed file is an error "
            "(exit 2)\nthat names the file, line and key; integers are read in 64 bits, so one too "
            "large is refused,\nnever wrapped. `@include` is not supported. `warren config check` "
            "prints the effective values,\nevery password masked, with where each came from "
            "(default, file or env).\n"
            "\n"
            "The daemons (`warren executor`, `warren worker`) read the same file and environment "
            "again on\nSIGHUP (`systemctl reload`): keys marked *yes* under reload take effect "
            "at once, each where it\nis next used; a changed key marked *restart* is named in "
            "one log line and keeps its running value\nuntil the daemon is restarted. A file "
            "that does not load changes nothing: the error is logged\n(file, line, key) and the "
            "daemon keeps its configuration. The environment is the process's own,\nfixed at "
            "its start: a changed `EnvironmentFile` or container environment needs a restart.\n\n"
            "| key | type | default | bounds / values | environment | reload | description |\n"
            "|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < cfg_table_len; i++) {
        const cfg_key_t *k = &cfg_table[i];
        char bounds[128] = "", env[160];
        if (k->type == CT_INT)
            snprintf(bounds, sizeof bounds, "%lld .. %lld", k->min, k->max);
        else if (k->type == CT_ENUM)
            choices_text(k, bounds, sizeof bounds);
        cfg_env_name(k->path, env, sizeof env);
        static const char *const types[] = {"string", "integer", "boolean", "enum", "actions"};
        fprintf(out, "| `%s` | %s | `%s` | %s | `%s` | %s | %s%s |\n", k->path, types[k->type],
                k->def, bounds, env, k->reloadable ? "yes" : "restart", k->help,
                k->secret ? " (secret: masked in `config check`)" : "");
    }
}
