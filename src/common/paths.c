/* Finding the handlers and the schema from where the running binary is (warren/paths.h). */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "warren/paths.h"
#include "warren/version.h"

#define BUILD_TREE_MARKER "warren-build-tree"

static char handlers_dir[PATH_MAX], schema_dir[PATH_MAX], worker_binary[PATH_MAX];
static pthread_once_t located = PTHREAD_ONCE_INIT;

/* base + "/" + rel, or rel alone when the install directory was given as an absolute path. */
static void join(char *dst, const char *base, const char *rel)
{
    if (rel[0] == '/')
        snprintf(dst, PATH_MAX, "%s", rel);
    else
        snprintf(dst, PATH_MAX, "%s/%s", base, rel);
}

/* dir minus a trailing "/" + suffix (e.g. "/usr/bin" minus "bin" is "/usr"); false if it has none. */
static bool strip_suffix(char *dir, const char *suffix)
{
    size_t n = strlen(dir), s = strlen(suffix);
    if (s == 0 || n < s + 1 || dir[n - s - 1] != '/' || strcmp(dir + n - s, suffix) != 0)
        return false;
    dir[n - s - 1] = '\0';
    if (dir[0] == '\0')
        snprintf(dir, 2, "/");
    return true;
}

static void locate(void)
{
    char dir[PATH_MAX], marker[PATH_MAX + sizeof BUILD_TREE_MARKER + 1];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) { /* no /proc: the prefix the build was configured with is all there is */
        join(handlers_dir, WARREN_INSTALL_PREFIX, WARREN_INSTALL_HANDLERSDIR);
        join(schema_dir, WARREN_INSTALL_PREFIX, WARREN_INSTALL_SCHEMADIR);
        return;
    }
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    if ((size_t)snprintf(worker_binary, sizeof worker_binary, "%s/warren-worker", dir) >=
        sizeof worker_binary)
        worker_binary[0] = '\0'; /* too long to exec: run in-process */
    snprintf(marker, sizeof marker, "%s/%s", dir, BUILD_TREE_MARKER);
    struct stat st;
    if (stat(marker, &st) == 0) {
        join(handlers_dir, dir, "handlers");
        join(schema_dir, dir, "schema");
        return;
    }
    /* PREFIX/bin/warren -> PREFIX; a binary elsewhere counts its directory's parent as the prefix. */
    if (!strip_suffix(dir, WARREN_INSTALL_BINDIR) && (slash = strrchr(dir, '/')) != NULL)
        *(slash == dir ? slash + 1 : slash) = '\0';
    join(handlers_dir, dir, WARREN_INSTALL_HANDLERSDIR);
    join(schema_dir, dir, WARREN_INSTALL_SCHEMADIR);
}

const char *paths_handlers_dir(void)
{
    pthread_once(&located, locate);
    return handlers_dir;
}

const char *paths_schema_dir(void)
{
    pthread_once(&located, locate);
    return schema_dir;
}

const char *paths_worker_binary(void)
{
    pthread_once(&located, locate);
    return worker_binary;
}
