/*
 * Where the files that ship with the binary are: the handlers and the schema migrations. They
 * are found from the binary's own location, never from a path of the source tree compiled in:
 *   - installed: PREFIX/bin/warren uses PREFIX/libexec/warren/handlers and
 *     PREFIX/share/warren/schema (the layout of `cmake --install`, wherever the prefix is);
 *   - in a build tree (a `warren-build-tree` file beside the binary, written by CMake):
 *     BUILD/handlers (links to the checkout's handlers plus the C handlers built there) and
 *     BUILD/schema (a link to the checkout's schema/).
 * Both answers are computed once, on the first call, and stay valid for the process's life.
 */
#ifndef WARREN_PATHS_H
#define WARREN_PATHS_H

/* The handlers directory that worker.handlers_dir = "" stands for. */
const char *paths_handlers_dir(void);
/* The directory of numbered migrations (`warren migrate` without --dir). */
const char *paths_schema_dir(void);
/* warren-worker beside the running binary (built and installed next to it), or "" when the
 * binary's location is unknown (no /proc); it may not exist. */
const char *paths_worker_binary(void);

#endif
