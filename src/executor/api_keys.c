/* The API's named, scoped keys: parsing, the keys file's permissions, constant-time lookup. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "executor/api_keys.h"
#include "warren/http.h"

#define KEYS_FILE_MAX (1 << 20)

void api_keys_free(api_keys_t *k)
{
    if (k->keys)
        explicit_bzero(k->keys, k->cap * sizeof *k->keys);
    free(k->keys);
    memset(k, 0, sizeof *k);
}

static const char *const scope_names[] = {"", "read", "submit", "operate", "admin"};

const char *api_scope_name(api_scope_t s)
{
    return s >= API_SCOPE_READ && s <= API_SCOPE_ADMIN ? scope_names[s] : "none";
}

api_scope_t api_scope_parse(const char *name, size_t len, bool *deprecated)
{
    *deprecated = len == 5 && !strncmp(name, "write", 5);
    if (*deprecated)
        return API_SCOPE_OPERATE;
    for (int s = API_SCOPE_READ; s <= API_SCOPE_ADMIN; s++)
        if (strlen(scope_names[s]) == len && !strncmp(name, scope_names[s], len))
            return (api_scope_t)s;
    return 0;
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > API_KEY_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", s[i]))
            return false;
    return true;
}

/* Printable ASCII without spaces or commas: what fits in a header, a file line and api.keys. */
static bool secret_ok(const char *s, size_t n)
{
    if (n < API_KEY_SECRET_MIN || n > API_KEY_SECRET_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == ',')
            return false;
    return true;
}

static int add(api_keys_t *k, const char *name, size_t nlen, const char *scope, size_t slen,
               const char *secret, size_t sclen, const char *where, char *err, size_t errlen)
{
    if (!name_ok(name, nlen)) {
        snprintf(err, errlen, "%s: key name '%.*s' must be 1-%d of [A-Za-z0-9_.-]", where,
                 (int)(nlen > 64 ? 64 : nlen), name, API_KEY_NAME_MAX);
        return -1;
    }
    bool named_write;
    api_scope_t sc = api_scope_parse(scope, slen, &named_write);
    if (!sc) {
        snprintf(err, errlen,
                 "%s: key '%.*s': scope must be read, submit, operate or admin (write: "
                 "deprecated, means operate)",
                 where, (int)nlen, name);
        return -1;
    }
    if (!secret_ok(secret, sclen)) {
        snprintf(err, errlen,
                 "%s: key '%.*s': the secret must be %d-%d printable characters without spaces "
                 "or commas",
                 where, (int)nlen, name, API_KEY_SECRET_MIN, API_KEY_SECRET_MAX);
        return -1;
    }
    for (size_t i = 0; i < k->n; i++) {
        bool same_name = strlen(k->keys[i].name) == nlen && !strncmp(k->keys[i].name, name, nlen);
        bool same_secret = strlen(k->keys[i].secret) == sclen &&
                           !strncmp(k->keys[i].secret, secret, sclen);
        if (same_name || same_secret) {
            snprintf(err, errlen, "%s: key '%.*s': %s key '%s'", where, (int)nlen, name,
                     same_name ? "a second" : "the same secret as", k->keys[i].name);
            return -1;
        }
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 8;
        api_key_t *keys = calloc(cap, sizeof *keys);
        if (!keys) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (k->keys) {
            memcpy(keys, k->keys, k->n * sizeof *keys);
            explicit_bzero(k->keys, k->cap * sizeof *k->keys);
            free(k->keys);
        }
        k->keys = keys;
        k->cap = cap;
    }
    api_key_t *key = &k->keys[k->n++];
    memcpy(key->name, name, nlen);
    key->name[nlen] = '\0';
    key->scope = sc;
    key->named_write = named_write;
    memcpy(key->secret, secret, sclen);
    key->secret[sclen] = '\0';
    return 0;
}

int api_keys_add_list(api_keys_t *k, const char *text, const char *where, char *err, size_t errlen)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        const char *c1 = memchr(p, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(p + n - c1 - 1)) : NULL;
        if (!c2) {
            snprintf(err, errlen, "%s: entry %zu: expected NAME:SCOPE:SECRET", where,
                     (size_t)1 + k->n);
            return -1;
        }
        if (add(k, p, (size_t)(c1 - p), c1 + 1, (size_t)(c2 - c1 - 1), c2 + 1,
                (size_t)(p + n - c2 - 1), where, err, errlen) != 0)
            return -1;
        p += n + (p[n] == ',');
    }
    return 0;
}

int api_keys_add_file_text(api_keys_t *k, const char *text, const char *file, char *err,
                           size_t errlen)
{
    int line = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        line++;
        const char *f[4];
        size_t fl[4], nf = 0;
        for (const char *q = p; q < p + n && nf < 4;) {
            q += strspn(q, " \t\r");
            if (q >= p + n || *q == '#')
                break;
            size_t w = strcspn(q, " \t\r\n");
            f[nf] = q;
            fl[nf++] = w;
            q += w;
        }
        char where[300];
        snprintf(where, sizeof where, "%s:%d", file, line);
        if (nf != 0 && nf != 3) {
            snprintf(err, errlen, "%s: expected NAME SCOPE SECRET", where);
            return -1;
        }
        if (nf == 3 && add(k, f[0], fl[0], f[1], fl[1], f[2], fl[2], where, err, errlen) != 0)
            return -1;
        p += n + (p[n] == '\n');
    }
    return 0;
}

int api_keys_add_file(api_keys_t *k, const char *file, char *err, size_t errlen)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "api.keys_file %s: cannot read: %s", file, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    const char *why = !S_ISREG(st.st_mode)                 ? "is not a regular file"
                      : (st.st_mode & (S_IRWXG | S_IRWXO)) ? "is readable or writable by group "
                                                             "or others (chmod 600 it)"
                      : st.st_size > KEYS_FILE_MAX         ? "is larger than 1 MiB"
                                                           : NULL;
    if (why) {
        close(fd);
        snprintf(err, errlen, "api.keys_file %s %s", file, why);
        return -1;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (got < 0) {
        free(buf);
        snprintf(err, errlen, "api.keys_file %s: cannot read", file);
        return -1;
    }
    buf[got] = '\0';
    int rc = memchr(buf, '\0', (size_t)got)
                 ? (snprintf(err, errlen, "api.keys_file %s: NUL byte", file), -1)
                 : api_keys_add_file_text(k, buf, file, err, errlen);
    explicit_bzero(buf, (size_t)got);
    free(buf);
    return rc;
}

int api_keys_load(api_keys_t *k, const warren_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->api.keys && *cfg->api.keys &&
        api_keys_add_list(k, cfg->api.keys, "api.keys", err, errlen) != 0)
        return -1;
    if (cfg->api.keys_file && *cfg->api.keys_file &&
        api_keys_add_file(k, cfg->api.keys_file, err, errlen) != 0)
        return -1;
    return 0;
}

const api_key_t *api_keys_find(const api_keys_t *k, const char *secret)
{
    const api_key_t *found = NULL;
    for (size_t i = 0; i < k->n; i++) /* no early exit: every key costs the same */
        if (http_secret_equal(secret, k->keys[i].secret))
            found = &k->keys[i];
    return found;
}
