/*
 * Starting handler processes so that they die with the worker, however it dies.
 *
 * spawn_handler() starts a handler in a process group of its own, like posix_spawn but with two
 * steps posix_spawn cannot take between fork and exec: PR_SET_PDEATHSIG(SIGKILL), so the
 * kernel kills the handler process when the worker dies (also of SIGKILL), and its registration
 * with the guard. The guard is a small helper process forked at start: it reads the handler
 * process groups from a pipe and, when the pipe reaches end of file (the worker is gone, for
 * whatever reason), kills every group still registered with SIGKILL. The death signal alone
 * would reach only the handler process, not what it started (a shell script's children); the
 * guard alone would miss a group the worker died before registering. The child registers
 * itself before it execs, while it still holds a copy of the pipe, so the guard always learns
 * of it first.
 *
 * The death signal follows the thread that spawned the handler, not the process: call these
 * from a thread that lives as long as the worker (its loop's). Threads of in-process handlers
 * may run meanwhile: the vfork()ed child touches only its own frame and the kernel's state.
 */
#ifndef WARREN_WORKER_SPAWN_H
#define WARREN_WORKER_SPAWN_H

#include <sys/types.h>
#include "warren/common.h"

typedef struct spawn_guard {
    pid_t pid; /* the guard process; 0 when none runs */
    int fd;    /* write end of its pipe (O_CLOEXEC, O_NONBLOCK); -1 when none */
} spawn_guard_t;

/* Fork the guard. -1 with the reason in err when it cannot start. The caller stops it with
 * spawn_guard_stop(), and reaps it (it is the caller's child) if it dies before. */
int spawn_guard_start(spawn_guard_t *g, char *err, size_t errlen) WARN_UNUSED;
/* Close the pipe: the guard kills the groups still registered, then exits; wait for it. */
void spawn_guard_stop(spawn_guard_t *g);
/* The group of pid (its leader) is gone or about to be killed by the caller: forget it.
 * Also to register again (after a new guard started): spawn_guard_add. Best effort: a guard
 * that cannot be told is logged by the caller's next start. */
void spawn_guard_add(const spawn_guard_t *g, pid_t pgid);
void spawn_guard_forget(const spawn_guard_t *g, pid_t pgid);

/*
 * Start path with argv and envp, its stdin, stdout and stderr being fds[0..2] and no other
 * descriptor, in a new process group (pgid = its pid), with an empty signal mask, default signal
 * dispositions, PR_SET_PDEATHSIG(SIGKILL), registered with g (when g->fd >= 0). Returns 0 with
 * *pid set, or an errno value (the exec's own error when the handler could not be executed; the
 * child is then reaped and unregistered).
 */
int spawn_handler(const spawn_guard_t *g, const char *path, char *const argv[], char *const envp[],
                  const int fds[3], pid_t *pid) WARN_UNUSED;

#endif
