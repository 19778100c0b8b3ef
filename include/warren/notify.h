/*
 * Readiness notification to a service manager (systemd's sd_notify protocol, sd_notify(3)):
 * "READY=1", "STATUS=...", "RELOADING=1", "STOPPING=1" and "WATCHDOG=1" as datagrams on the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name written with a leading
 * '@'). Written here rather than linked from libsystemd: the protocol is one datagram, and the
 * binary and its image stay free of libsystemd and what it pulls in (docs/architecture.md).
 * Without $NOTIFY_SOCKET every call does nothing, so the daemons run the same under systemd,
 * in a container or from a shell.
 */
#ifndef WARREN_NOTIFY_H
#define WARREN_NOTIFY_H

#include "warren/common.h"

/*
 * Take $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID from the environment and remove them
 * from it, as sd_notify's unset_environment does: in-process handlers share the environment,
 * and nothing else may speak for the daemon. Opens the socket (close-on-exec);
 * a name that cannot be used is logged and notification stays off. Call once, at daemon start,
 * before any other notify_* call; calling it again does nothing.
 */
void notify_init(void);
/* Release the socket (at exit). */
void notify_close(void);
/* True when a service manager listens (notify_init found a usable $NOTIFY_SOCKET). */
bool notify_enabled(void);

/* "READY=1" with a status line. */
void notify_ready(const char *status);
/* "STATUS=..." alone: what the daemon is doing or waiting for. */
void notify_status(const char *status);
/* "RELOADING=1" with the monotonic clock systemd 253 asks for, and a status line; sent only
 * once READY=1 was (a reload before readiness changes nothing the manager knows). */
void notify_reloading(void);
/* The reload is over: "READY=1" after a RELOADING=1, with a status line (a status line alone
 * when none was sent). */
void notify_reloaded(const char *status);
/* "STOPPING=1" with a status line: a drain started. No READY=1 after a reload from now on. */
void notify_stopping(const char *status);
/* "WATCHDOG=1": the loop is alive. */
void notify_watchdog(void);
/* How often to send WATCHDOG=1, in ms: half of $WATCHDOG_USEC when it was meant for this
 * process; 0 when no watchdog is wanted. */
int64_t notify_watchdog_interval_ms(void);

/*
 * Build the message sent for `state` (e.g. "READY=1") and an optional status line into buf:
 * "READY=1\nSTATUS=..." with any newline of status replaced by a space, so a status cannot
 * carry an assignment of its own. Returns the length, or -1 when it does not fit. For tests.
 */
int notify_format(char *buf, size_t len, const char *state, const char *status) WARN_UNUSED;
/*
 * Parse a $NOTIFY_SOCKET value into a socket address: "/path" or "@abstract". 0 with the
 * address and its length, -1 with the reason in why (relative paths, other families and names
 * longer than sun_path are refused). For tests.
 */
struct sockaddr_un;
int notify_address(const char *value, struct sockaddr_un *sa, unsigned *salen, char *why,
                   size_t whylen) WARN_UNUSED;

#endif
