/*
 * The floor under exec handlers: run a handler script N times with posix_spawn, P at a time
 * (the workers' slots), each given the params on stdin and its stdout read to the end, as a
 * handler's result must be; no broker, no database. bench/run compares warren's end-to-end rate
 * for the same script with this one.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct slot {
    pid_t pid;
    int out; /* the child's stdout, -1 when read to the end */
} slot_t;

static void die(const char *what)
{
    fprintf(stderr, "bench_spawn: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Start the script with the params on a pipe as stdin and a pipe as stdout. */
static void start(slot_t *s, const char *script, const char *params, char *const envp[])
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        die("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    char *argv[] = {(char *)script, NULL};
    int rc = posix_spawn(&s->pid, script, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        die(script);
    }
    close(in[0]);
    close(out[1]);
    /* The params are far below a pipe's buffer: this write never blocks. */
    size_t len = strlen(params);
    if (write(in[1], params, len) != (ssize_t)len)
        die("write params");
    close(in[1]);
    s->out = out[0];
}

/* Read whatever is there; at end of file reap the child. Returns 1 when the slot is free. */
static int drain(slot_t *s)
{
    char buf[4096];
    ssize_t r = read(s->out, buf, sizeof buf);
    if (r > 0 || (r < 0 && errno == EINTR))
        return 0;
    if (r < 0)
        die("read");
    close(s->out);
    s->out = -1;
    int status;
    if (waitpid(s->pid, &status, 0) != s->pid)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_spawn: the script failed (status %d)\n", status);
        exit(1);
    }
    return 1;
}

int main(int argc, char **argv)
{
    int n = 1000, par = 8, ch;
    const char *params = "{}";
    while ((ch = getopt(argc, argv, "n:j:p:h")) != -1) {
        switch (ch) {
        case 'n': n = atoi(optarg); break;
        case 'j': par = atoi(optarg); break;
        case 'p': params = optarg; break;
        default:
            fprintf(ch == 'h' ? stdout : stderr,
                    "usage: bench_spawn [-n RUNS] [-j PARALLEL] [-p PARAMS] SCRIPT\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    if (optind != argc - 1 || n < 1 || par < 1 || par > 1024) {
        fprintf(stderr, "usage: bench_spawn [-n RUNS] [-j PARALLEL] [-p PARAMS] SCRIPT\n");
        return 2;
    }
    const char *script = argv[optind];
    char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
    signal(SIGPIPE, SIG_IGN);
    slot_t *slots = calloc((size_t)par, sizeof *slots);
    struct pollfd *pfd = calloc((size_t)par, sizeof *pfd);
    if (!slots || !pfd)
        die("calloc");
    double t0 = now_s();
    int started = 0, done = 0;
    for (int i = 0; i < par && started < n; i++, started++)
        start(&slots[i], script, params, envp);
    for (int i = started; i < par; i++)
        slots[i].out = -1;
    while (done < n) {
        for (int i = 0; i < par; i++)
            pfd[i] = (struct pollfd){.fd = slots[i].out, .events = POLLIN};
        if (poll(pfd, (nfds_t)par, -1) < 0 && errno != EINTR)
            die("poll");
        for (int i = 0; i < par; i++) {
            if (slots[i].out < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (!drain(&slots[i]))
                continue;
            done++;
            if (started < n) {
                start(&slots[i], script, params, envp);
                started++;
            }
        }
    }
    double secs = now_s() - t0;
    printf("spawn n=%d parallel=%d total_s=%.3f per_s=%.0f\n", n, par, secs, n / secs);
    free(slots);
    free(pfd);
    return 0;
}
