/* Starting handler processes that die with the worker: the death signal and the guard. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "worker/spawn.h"

#define GUARD_FD 3 /* where the guard keeps its end of the pipe */

/* Default dispositions for every signal (what exec would not reset: ignored ones; and no
 * handler of the worker may run in a child that shares its memory). */
static void signals_default(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            (void)sigaction(sig, &dfl, NULL); /* EINVAL for the C library's own: fine */
}

static void signals_unblock(void)
{
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* ---- the guard --------------------------------------------------------------------------- */

typedef struct groups {
    pid_t *ids;
    size_t n, cap;
} groups_t;

static void groups_add(groups_t *g, pid_t id)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        pid_t *grown = realloc(g->ids, cap * sizeof *grown);
        if (!grown)
            return; /* that group is not protected; the death signal still is */
        g->ids = grown;
        g->cap = cap;
    }
    g->ids[g->n++] = id;
}

static void groups_forget(groups_t *g, pid_t id)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->ids[i] == id) {
            g->ids[i] = g->ids[--g->n];
            return;
        }
}

/*
 * The guard's life, in the forked child: follow the pipe until the worker is gone, then kill
 * every group still registered. It answers to the pipe only: signals a terminal or a supervisor
 * sends to the worker's process group are ignored, and a group of its own keeps a kill of the
 * worker's group from taking the guard along before it has done its job.
 */
__attribute__((noreturn)) static void guard_run(int rfd)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    signals_default();
    static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        (void)sigaction(ignored[i], &ign, NULL);
    signals_unblock();
    (void)setpgid(0, 0);
    (void)prctl(PR_SET_NAME, "warren-guard");
    if (rfd != GUARD_FD && dup2(rfd, GUARD_FD) < 0)
        _exit(1);
    closefrom(GUARD_FD + 1); /* the worker's sockets, its end of this pipe, handler pipes */
    /* Nor does it hold the worker's output (a supervisor's pipe) open: it has nothing to say. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && null >= 0; fd++)
        (void)dup2(null, fd);

    groups_t groups = {0};
    int32_t rec[256];
    for (;;) {
        ssize_t got = read(GUARD_FD, rec, sizeof rec);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* end of file: the worker is gone */
        /* Every record is written whole (4 bytes, below PIPE_BUF), so reads never split one. */
        for (size_t i = 0; i < (size_t)got / sizeof rec[0]; i++)
            if (rec[i] > 0)
                groups_add(&groups, rec[i]);
            else
                groups_forget(&groups, -rec[i]);
    }
    for (size_t i = 0; i < groups.n; i++)
        (void)kill(-groups.ids[i], SIGKILL);
    _exit(0);
}

int spawn_guard_start(spawn_guard_t *g, char *err, size_t errlen)
{
    int p[2];
    g->pid = 0;
    g->fd = -1;
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot start the handler guard: pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        guard_run(p[0]);
    }
    int saved = errno;
    close(p[0]);
    int flags = fcntl(p[1], F_GETFL);
    if (pid < 0 || flags < 0 || fcntl(p[1], F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "cannot start the handler guard: %s",
                 strerror(pid < 0 ? saved : errno));
        close(p[1]); /* a guard that did start sees end of file and exits */
        return -1;
    }
    g->pid = pid;
    g->fd = p[1];
    return 0;
}

void spawn_guard_stop(spawn_guard_t *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->pid > 0)
        while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    g->pid = 0;
}

static void guard_tell(const spawn_guard_t *g, int32_t rec)
{
    /* Non-blocking: a guard that stopped reading must never stall the worker. */
    if (g->fd >= 0)
        while (write(g->fd, &rec, sizeof rec) < 0 && errno == EINTR)
            ;
}

void spawn_guard_add(const spawn_guard_t *g, pid_t pgid)
{
    guard_tell(g, (int32_t)pgid);
}

void spawn_guard_forget(const spawn_guard_t *g, pid_t pgid)
{
    guard_tell(g, -(int32_t)pgid);
}

/* ---- the handler ------------------------------------------------------------------------- */

typedef struct child {
    const char *path;
    char *const *argv, *const *envp;
    const int *fds;
    int guard_fd;
    pid_t parent;
    volatile int err; /* written by the child, which shares the parent's memory until exec */
} child_t;

/*
 * In the vfork()ed child, on the parent's memory: system calls only, and never return. The
 * parent is suspended until the exec, so nothing it does can race with these steps.
 */
__attribute__((noreturn)) static void child_exec(child_t *c)
{
    signals_default();
    if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
        c->err = errno;
        _exit(127);
    }
    if (getppid() != c->parent) { /* the worker died before the death signal was set */
        c->err = ESRCH;
        _exit(127);
    }
    if (c->guard_fd >= 0) {
        int32_t me = (int32_t)getpid();
        while (write(c->guard_fd, &me, sizeof me) < 0 && errno == EINTR)
            ;
    }
    for (int fd = 0; fd < 3; fd++)
        if (dup2(c->fds[fd], fd) < 0) {
            c->err = errno;
            _exit(127);
        }
    closefrom(3); /* the broker socket, the guard's pipe, other handlers' pipes */
    signals_unblock();
    execve(c->path, c->argv, c->envp);
    c->err = errno;
    _exit(127);
}

/* vfork() returns twice: keep the frame that sees it small and never return in the child. */
static pid_t vfork_child(child_t *c)
{
    /* Not posix_spawn: the child takes two steps it cannot (spawn.h). child_exec() makes
     * system calls only and ends in execve() or _exit(), which is what vfork() allows. */
    pid_t pid = vfork(); /* NOLINT(clang-analyzer-security.insecureAPI.vfork) */
    if (pid == 0)
        child_exec(c); /* NOLINT(clang-analyzer-unix.Vfork) */
    return pid;
}

int spawn_handler(const spawn_guard_t *g, const char *path, char *const argv[], char *const envp[],
                  const int fds[3], pid_t *pid)
{
    child_t c = {path, argv, envp, fds, g->fd, getpid(), 0};
    sigset_t all, old;
    sigfillset(&all);
    /* No signal handler of the worker may run in the child before it reset them. */
    (void)sigprocmask(SIG_SETMASK, &all, &old);
    pid_t child = vfork_child(&c);
    int saved = errno;
    (void)sigprocmask(SIG_SETMASK, &old, NULL);
    if (child < 0)
        return saved;
    if (c.err != 0) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
        spawn_guard_forget(g, child);
        return c.err;
    }
    *pid = child;
    return 0;
}
