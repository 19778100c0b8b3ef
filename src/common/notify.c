/* sd_notify's datagrams to $NOTIFY_SOCKET, written out: readiness, status, reload, stop, watchdog. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "warren/log.h"
#include "warren/notify.h"

/* Longer messages are cut: STATUS lines are short, and systemd reads at most a page or so. */
#define NOTIFY_MAX 1024

static struct {
    bool initialised;
    int fd; /* -1: notification off */
    struct sockaddr_un addr;
    unsigned addrlen;
    int64_t watchdog_ms;
    bool ready; /* READY=1 went out, and no STOPPING=1 since */
    bool reloading;
    bool send_failed_logged;
} st = {.fd = -1};

int notify_address(const char *value, struct sockaddr_un *sa, unsigned *salen, char *why,
                   size_t whylen)
{
    size_t n = strlen(value);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (value[0] != '/' && value[0] != '@') {
        snprintf(why, whylen, "not an absolute path or an abstract name ('@...')");
        return -1;
    }
    if (n < 2 || n > sizeof sa->sun_path - (value[0] == '/')) {
        snprintf(why, whylen, "%s name", n < 2 ? "an empty" : "too long a");
        return -1;
    }
    /* An abstract name starts with a NUL byte and is exactly as long as given: no terminator. */
    memcpy(sa->sun_path, value, n);
    if (value[0] == '@')
        sa->sun_path[0] = '\0';
    *salen = (unsigned)(offsetof(struct sockaddr_un, sun_path) + n + (value[0] == '/'));
    return 0;
}

int notify_format(char *buf, size_t len, const char *state, const char *status)
{
    int n = snprintf(buf, len, "%s%s", state, !status ? "" : *state ? "\nSTATUS=" : "STATUS=");
    if (n < 0 || (size_t)n >= len)
        return -1;
    /* The status comes last, its newlines blanked: it cannot start an assignment of its own. */
    size_t o = (size_t)n;
    for (const char *p = status ? status : ""; *p; p++) {
        if (o + 1 >= len)
            return -1;
        buf[o++] = (char)(*p == '\n' ? ' ' : *p);
    }
    buf[o] = '\0';
    return (int)o;
}

/* WATCHDOG_USEC applies to this process unless WATCHDOG_PID names another one. */
static int64_t watchdog_from_env(void)
{
    const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
    if (!usec || !*usec)
        return 0;
    char *end;
    long long us = strtoll(usec, &end, 10);
    if (*end || us <= 0)
        return 0;
    if (pid && *pid && strtoll(pid, NULL, 10) != (long long)getpid())
        return 0;
    int64_t ms = us / 2000; /* half the interval, as sd_watchdog_enabled(3) advises */
    return ms > 0 ? ms : 1;
}

void notify_init(void)
{
    if (st.initialised)
        return;
    st.initialised = true;
    const char *value = getenv("NOTIFY_SOCKET");
    st.watchdog_ms = value ? watchdog_from_env() : 0;
    if (value && *value) {
        char why[128];
        if (notify_address(value, &st.addr, &st.addrlen, why, sizeof why) != 0)
            log_kv(LOG_WARN, "NOTIFY_SOCKET ignored: no readiness notification", "value", value,
                   "error", why, NULL);
        else if ((st.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
            log_kv(LOG_WARN, "cannot open a socket for readiness notification", "error",
                   strerror(errno), NULL);
    }
    if (st.fd < 0)
        st.watchdog_ms = 0;
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

void notify_close(void)
{
    if (st.fd >= 0)
        close(st.fd);
    st.fd = -1;
}

bool notify_enabled(void)
{
    return st.fd >= 0;
}

int64_t notify_watchdog_interval_ms(void)
{
    return st.watchdog_ms;
}

static void send_state(const char *state, const char *status)
{
    if (st.fd < 0)
        return;
    char msg[NOTIFY_MAX];
    int n = notify_format(msg, sizeof msg, state, status);
    if (n < 0) /* a status too long: the state alone still says what matters */
        n = notify_format(msg, sizeof msg, state, NULL);
    if (n < 0)
        return;
    if (sendto(st.fd, msg, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&st.addr, st.addrlen) < 0 &&
        !st.send_failed_logged) {
        /* Once: a manager that went away would otherwise fill the log at every status. */
        st.send_failed_logged = true;
        log_kv(LOG_WARN, "readiness notification failed", "error", strerror(errno), NULL);
    }
}

void notify_ready(const char *status)
{
    st.ready = true;
    send_state("READY=1", status);
}

void notify_status(const char *status)
{
    send_state("", status);
}

void notify_reloading(void)
{
    st.reloading = st.ready;
    if (!st.reloading) /* not ready yet: a reload is no state change for the manager */
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char state[64];
    snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%lld",
             (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    send_state(state, "reloading the configuration");
}

void notify_reloaded(const char *status)
{
    send_state(st.reloading ? "READY=1" : "", status);
    st.reloading = false;
}

void notify_stopping(const char *status)
{
    st.ready = false;
    send_state("STOPPING=1", status);
}

void notify_watchdog(void)
{
    send_state("WATCHDOG=1", NULL);
}
