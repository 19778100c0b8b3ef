/*
 * Fibers: code that waits without holding up its event loop. A fiber is a function run on a
 * stack of its own; where it would wait (a socket, a timer, a lock), it hands the thread back to
 * the loop, and the loop resumes it when the socket is ready, the time has come or the lock is
 * free. A statement on a database connection, a publish waiting for its confirms or an HTTP
 * handler reading the database is written straight, top to bottom, and yet the loop keeps
 * answering /livez, reading heartbeats and applying results meanwhile.
 *
 * Everything still runs on the loop's one thread: a fiber gives the thread up only inside the
 * calls below, and fibers are resumed only from the loop (a fiber never switches to another
 * directly). State that a fiber uses across one of its waits, and that another fiber may use
 * too (a database connection, a MessageClient), takes a fiber_lock_t.
 *
 * Outside a fiber (start-up, shutdown, the CLI, tests) the same calls wait in poll() or
 * nanosleep() as before, so the modules that use them work the same in both places.
 */
#ifndef WARREN_FIBER_H
#define WARREN_FIBER_H

#include <event2/event.h>
#include "warren/common.h"

typedef void (*fiber_fn)(void *arg);

/* Run fn(arg) on a new fiber of base (borrowed; every fiber of a process uses the same base),
 * starting at the loop's next turn. name is for logs (static text). -1 (logged) when out of
 * memory: fn is not run. */
int fiber_start(struct event_base *base, const char *name, fiber_fn fn, void *arg) WARN_UNUSED;
/* Is the caller running on a fiber? */
bool fiber_active(void);
/* Fibers started that have not ended. */
size_t fiber_count(void);

/*
 * Wait until fd is ready for events (POLLIN and/or POLLOUT) or the monotonic deadline_ms passes
 * (INT64_MAX: no deadline). Returns the events that are ready (POLLIN, POLLOUT; a socket with an
 * error or a hang-up counts as ready), 0 when the deadline passed, -1 when poll() failed or the
 * fibers are being stopped (fiber_cancel_all).
 */
int fiber_wait_fd(int fd, short events, int64_t deadline_ms);
/* Pause for ms milliseconds (the loop runs meanwhile on a fiber). */
void fiber_sleep_ms(int64_t ms);

/* Shutdown, once the loop should end: every wait, now and from now on, returns at once as if
 * it failed (fiber_wait_fd -1, fiber_lock 0), so each fiber runs its error paths to its end. */
void fiber_cancel_all(void);
/* After the loop has ended: free what ended fibers left (their stacks are kept for reuse). */
void fiber_cleanup(void);

/* Fibers waiting for something another fiber signals (a connection given back). Zeroed: none. */
typedef struct fiber_cond {
    struct fiber *head, *tail; /* first come first served */
} fiber_cond_t;

/* Wait for fiber_cond_signal until deadline_ms. 1 signalled, 0 not (the deadline passed, fibers
 * are being stopped, or the caller is not on a fiber). */
int fiber_cond_wait(fiber_cond_t *c, int64_t deadline_ms) WARN_UNUSED;
/* Wake the first waiter, if any, at the loop's next turn. */
void fiber_cond_signal(fiber_cond_t *c);
/* Waiters now. */
size_t fiber_cond_waiters(const fiber_cond_t *c);

/* A lock for state that fibers use across their waits. Zeroed: free. Re-entrant: the holder may
 * take it again (and releases it as often). Outside a fiber it can be taken only while free. */
typedef struct fiber_lock {
    const void *owner; /* NULL: free */
    int depth;
    fiber_cond_t waiters;
} fiber_lock_t;

/* Take l, waiting until deadline_ms at most. 1 taken, 0 not (the deadline passed, fibers are
 * being stopped, or it is held and the caller is not on a fiber). */
int fiber_lock(fiber_lock_t *l, int64_t deadline_ms) WARN_UNUSED;
/* Release once; the next waiter takes it at the loop's next turn. */
void fiber_unlock(fiber_lock_t *l);
/* Held by anyone (the caller included)? */
bool fiber_lock_held(const fiber_lock_t *l);
/* Held by the caller? */
bool fiber_lock_mine(const fiber_lock_t *l);

#endif
