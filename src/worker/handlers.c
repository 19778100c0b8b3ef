/* The handler registry: built-in and dlopen'd in-process handlers, and executable lookup. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "warren/ids.h"
#include "warren/log.h"
#include "warren/utf8.h"
#include "worker/handlers.h"

struct handlers {
    handler_entry_t *entries;
    size_t count;
    size_t alloc;
};

/* core.noop: completes at once with {}; the benchmark handler, it measures warren alone. */
static int noop_run(const char *params_json, size_t len, warren_handler_output_t *out)
{
    return 0;
}

static const warren_handler_t builtin_noop = {
    .abi_version = WARREN_HANDLER_ABI,
    .action_ref = "core.noop",
    .run = noop_run,
};

handlers_t *handlers_new(void)
{
    handlers_t *r = calloc(1, sizeof *r);
    char err[ERRBUF_SIZE];
    if (r && handlers_add(r, &builtin_noop, "built-in", err, sizeof err) < 0) {
        handlers_free(r);
        return NULL;
    }
    return r;
}

void handlers_free(handlers_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++)
        if (r->entries[i].module)
            dlclose(r->entries[i].module);
    free(r->entries);
    free(r);
}

const handler_entry_t *handlers_find(const handlers_t *r, const char *ref)
{
    for (size_t i = 0; i < r->count; i++)
        if (!strcmp(r->entries[i].action_ref, ref))
            return &r->entries[i];
    return NULL;
}

/* Check e (one descriptor, its fields read into e) and add it; -1 with the reason in err. */
static int add_entry(handlers_t *r, const handler_entry_t *e, uint32_t abi, bool has_run,
                     const char *origin, char *err, size_t errlen)
{
    uint32_t want = e->v2 ? WARREN_HANDLER_ABI_V2 : WARREN_HANDLER_ABI;
    if (abi != want) {
        snprintf(err, errlen, "%s: handler ABI %u in %s, this worker speaks ABI %u there", origin,
                 (unsigned)abi, e->v2 ? WARREN_HANDLER_SYMBOL_V2 : WARREN_HANDLER_SYMBOL,
                 (unsigned)want);
        return -1;
    }
    if (!ids_action_ref_valid(e->action_ref)) {
        const char *ref = e->action_ref ? e->action_ref : "(null)";
        snprintf(err, errlen, "%s: invalid action_ref '%.*s': %s", origin, utf8_prec(ref, 64), ref,
                 IDS_ACTION_REF_RULE);
        return -1;
    }
    if (!has_run) {
        snprintf(err, errlen, "%s: %s has no run function", origin, e->action_ref);
        return -1;
    }
    if (handlers_find(r, e->action_ref)) {
        snprintf(err, errlen, "%s: %s is already registered", origin, e->action_ref);
        return -1;
    }
    if (r->count == r->alloc) {
        size_t n = r->alloc ? r->alloc * 2 : 8;
        handler_entry_t *p = realloc(r->entries, n * sizeof *p);
        if (!p) {
            snprintf(err, errlen, "%s: out of memory", origin);
            return -1;
        }
        r->entries = p;
        r->alloc = n;
    }
    r->entries[r->count++] = *e;
    return 0;
}

static int add_v1(handlers_t *r, const warren_handler_t *desc, void *module, const char *origin,
                  char *err, size_t errlen)
{
    handler_entry_t e = {.action_ref = desc->action_ref, .v1 = desc, .module = module};
    return add_entry(r, &e, desc->abi_version, desc->run != NULL, origin, err, errlen);
}

static int add_v2(handlers_t *r, const warren_handler_v2_t *desc, void *module, const char *origin,
                  char *err, size_t errlen)
{
    handler_entry_t e = {.action_ref = desc->action_ref, .v2 = desc, .module = module};
    return add_entry(r, &e, desc->abi_version, desc->run != NULL, origin, err, errlen);
}

int handlers_add(handlers_t *r, const warren_handler_t *desc, const char *origin, char *err,
                 size_t errlen)
{
    return add_v1(r, desc, NULL, origin, err, errlen);
}

int handlers_add_v2(handlers_t *r, const warren_handler_v2_t *desc, const char *origin, char *err,
                    size_t errlen)
{
    return add_v2(r, desc, NULL, origin, err, errlen);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int is_module(const struct dirent *d)
{
    return d->d_name[0] != '.' && has_suffix(d->d_name, ".so");
}

bool handlers_writable_by_others(const struct stat *st)
{
    return (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

/*
 * A module runs inside the worker: only one that nobody but the worker's user (or root, who
 * controls the worker anyway) can have written may load. 0, or -1 with the reason.
 */
static int module_trusted(const char *path, const char *name, char *err, size_t errlen)
{
    struct stat st;
    uid_t me = geteuid();
    if (stat(path, &st) < 0) {
        snprintf(err, errlen, "%s: %s", name, strerror(errno));
        return -1;
    }
    if (st.st_uid != me && st.st_uid != 0) {
        snprintf(err, errlen,
                 "%s: owned by uid %u, not by the worker's user (uid %u) or root: refused, since "
                 "whoever owns it decides what runs inside the worker",
                 name, (unsigned)st.st_uid, (unsigned)me);
        return -1;
    }
    if (handlers_writable_by_others(&st)) {
        snprintf(err, errlen,
                 "%s: writable by its group or others (mode %03o): refused (chmod go-w)", name,
                 (unsigned)(st.st_mode & 0777));
        return -1;
    }
    return 0;
}

/* Load one module; 0 when its handler was added. The module stays open while registered. A
 * module exporting both descriptors is run as version 2. */
static int load_module(handlers_t *r, const char *dir, const char *name)
{
    char path[4096], err[ERRBUF_SIZE];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (module_trusted(path, name, err, sizeof err) < 0) {
        log_kv(LOG_ERROR, "handler module rejected", "module", path, "error", err, NULL);
        return -1;
    }
    void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        log_kv(LOG_ERROR, "handler module rejected", "module", path, "error", dlerror(), NULL);
        return -1;
    }
    const warren_handler_v2_t *v2 = dlsym(module, WARREN_HANDLER_SYMBOL_V2);
    const warren_handler_t *v1 = v2 ? NULL : dlsym(module, WARREN_HANDLER_SYMBOL);
    int rc = -1;
    if (v2)
        rc = add_v2(r, v2, module, name, err, sizeof err);
    else if (v1)
        rc = add_v1(r, v1, module, name, err, sizeof err);
    else
        snprintf(err, sizeof err, "%s: no symbol %s or %s (built for another handler ABI?)", name,
                 WARREN_HANDLER_SYMBOL_V2, WARREN_HANDLER_SYMBOL);
    if (rc == 0) {
        log_kv(LOG_INFO, "handler module loaded", "module", path, "action_ref",
               v2 ? v2->action_ref : v1->action_ref, "abi", v2 ? "2" : "1", NULL);
        return 0;
    }
    log_kv(LOG_ERROR, "handler module rejected", "module", path, "error", err, NULL);
    dlclose(module);
    return -1;
}

void handlers_keep_modules(handlers_t *r)
{
    for (size_t i = 0; i < r->count; i++)
        r->entries[i].module = NULL;
}

int handlers_load_dir(handlers_t *r, const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, is_module, alphasort);
    if (n < 0) {
        log_kv(LOG_WARN, "handlers directory unreadable", "dir", dir, "error", strerror(errno),
               NULL);
        return 0;
    }
    int loaded = 0;
    for (int i = 0; i < n; i++) {
        if (load_module(r, dir, names[i]->d_name) == 0)
            loaded++;
        free(names[i]);
    }
    free(names);
    return loaded;
}

static bool is_executable_file(const char *path, struct stat *st)
{
    return stat(path, st) == 0 && S_ISREG(st->st_mode) && access(path, X_OK) == 0;
}

/* An executable only its owner can change: whoever can write it decides what the worker runs. */
static bool is_handler_file(const char *path)
{
    struct stat st;
    return is_executable_file(path, &st) && !handlers_writable_by_others(&st);
}

int handlers_exec_path(const char *dir, const char *ref, char *path, size_t pathlen, char *err,
                       size_t errlen)
{
    struct stat st;
    if (!ids_action_ref_valid(ref)) {
        snprintf(err, errlen, "invalid action_ref '%.*s': %s", utf8_prec(ref ? ref : "", 64),
                 ref ? ref : "", IDS_ACTION_REF_RULE);
        return -1;
    }
    if (has_suffix(ref, ".so") || (size_t)snprintf(path, pathlen, "%s/%s", dir, ref) >= pathlen ||
        !is_executable_file(path, &st)) {
        snprintf(err, errlen, "no handler for action '%s' (no executable %.*s/%s)", ref,
                 utf8_prec(dir, 300), dir, ref);
        return -1;
    }
    if (handlers_writable_by_others(&st)) {
        snprintf(err, errlen,
                 "handler %.*s is writable by its group or others (mode %03o): refused (chmod "
                 "go-w)",
                 utf8_prec(path, 300), path, (unsigned)(st.st_mode & 0777));
        return -1;
    }
    return 0;
}

static int is_exec_candidate(const struct dirent *d)
{
    return ids_action_ref_valid(d->d_name) && !has_suffix(d->d_name, ".so");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The in-process handlers' names plus those of the executables among ents (scandir's result
 * for dir), unsorted and borrowed. */
static size_t collect_names(const handlers_t *r, const char *dir, struct dirent **ents, int n,
                            const char **out)
{
    size_t count = 0;
    char path[4096];
    for (size_t i = 0; i < r->count; i++)
        out[count++] = r->entries[i].action_ref;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        if (is_handler_file(path))
            out[count++] = ents[i]->d_name;
    }
    return count;
}

json_object *handlers_list(const handlers_t *r, const char *dir)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, is_exec_candidate, NULL);
    if (n < 0)
        n = 0;
    const char **names = malloc((r->count + (size_t)n + 1) * sizeof *names);
    json_object *list = json_object_new_array();
    if (names && list) {
        size_t count = collect_names(r, dir, ents, n, names);
        qsort(names, count, sizeof *names, cmp_str);
        for (size_t i = 0; i < count; i++)
            if (i == 0 || strcmp(names[i], names[i - 1]))
                json_object_array_add(list, json_object_new_string(names[i]));
    } else {
        json_object_put(list);
        list = NULL;
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    free(names);
    return list;
}
