/*
 * The handler registry: in-process handlers (the built-in core.noop and modules dlopen'd from
 * the handlers directory, of handler ABI version 1 or 2) and the lookup of executable handlers in
 * that directory.
 */
#ifndef WARREN_WORKER_HANDLERS_H
#define WARREN_WORKER_HANDLERS_H

#include <sys/stat.h>
#include <json-c/json.h>
#include "warren/common.h"
#include "warren/handler.h"

typedef struct handlers handlers_t;

/* One in-process handler: exactly one of v1 (runs inline on the loop) and v2 (runs on a thread
 * of its own) is set. */
typedef struct handler_entry {
    const char *action_ref;
    const warren_handler_t *v1;
    const warren_handler_v2_t *v2;
    void *module; /* dlopen handle, NULL for built-ins */
} handler_entry_t;

/*
 * A registry holding the built-in handlers. NULL on OOM. The caller frees it with
 * handlers_free(), which also dlcloses every module it loaded.
 */
handlers_t *handlers_new(void);
void handlers_free(handlers_t *r);

/*
 * Add an in-process handler of ABI version 1 or 2. desc is borrowed and must outlive the
 * registry; origin ("built-in", a file name) appears in errors. Fails with the reason on an ABI
 * mismatch, a missing run function, an invalid action_ref or one already registered.
 */
int handlers_add(handlers_t *r, const warren_handler_t *desc, const char *origin, char *err,
                 size_t errlen) WARN_UNUSED;
int handlers_add_v2(handlers_t *r, const warren_handler_v2_t *desc, const char *origin, char *err,
                    size_t errlen) WARN_UNUSED;

/* dlopen every *.so in dir and add its descriptor (version 2 when it exports one, else version
 * 1). Failures are logged and the module skipped, and so is a module owned by anyone but the
 * worker's user or root, or writable by its group or others (it would run inside the worker).
 * Returns the number of modules added. */
int handlers_load_dir(handlers_t *r, const char *dir);
/* handlers_free() will not dlclose the modules: code in them may still run (abandoned threads)
 * when the worker exits. */
void handlers_keep_modules(handlers_t *r);

/* The in-process handler for action_ref, or NULL. */
const handler_entry_t *handlers_find(const handlers_t *r, const char *action_ref);

/* Path of the executable handler for action_ref: a regular, executable file dir/<action_ref>
 * (never a *.so) that neither its group nor others can write. Returns -1 with the reason when
 * there is none or it is refused. */
int handlers_exec_path(const char *dir, const char *action_ref, char *path, size_t pathlen,
                       char *err, size_t errlen) WARN_UNUSED;

/* True when st (a handler file or the handlers directory) can be written by its group or by
 * others: whoever can write it can make the worker run their code. */
bool handlers_writable_by_others(const struct stat *st);

/* Every action_ref served, in-process and executable, sorted and unique, as a new JSON array of
 * strings (caller releases it with json_object_put()); NULL on OOM. */
json_object *handlers_list(const handlers_t *r, const char *dir);

#endif
