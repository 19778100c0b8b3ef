/*
 * The event-loop scaffolding both daemons share: millisecond timers, the jitter random source,
 * the AMQP pump interval, graded shutdown on signals, SIGHUP and the service manager's watchdog. Events are embedded in their owner's
 * struct (event_assign): nothing to allocate, nothing that can be NULL, and an owner that
 * outlives its base tears them down by freeing the base (evloop_base_free). Everything here
 * runs on the loop's thread.
 */
#ifndef WARREN_EVLOOP_H
#define WARREN_EVLOOP_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <sys/time.h>
#include "warren/common.h"

/* Free base (NULL: nothing) and with it every event still added to it, embedded ones included
 * (their memory stays the caller's); signal handlers are restored. */
void evloop_base_free(struct event_base *base);

/* ms as a timeval; a negative ms is 0 (due at once). */
struct timeval evloop_tv(int64_t ms);

/* Bounds of the pump interval (see evloop_pump_interval_ms). */
#define EVLOOP_PUMP_MIN_MS 100
#define EVLOOP_PUMP_MAX_MS 1000

/*
 * How often a daemon pumps its AMQP connections (mq_pump), given the heartbeat (0: off):
 * rabbitmq-c sends heartbeats only from inside library calls and the broker drops a connection
 * that stays silent longer than the heartbeat, so a quarter of it leaves room for a loop held
 * up by a slow statement. At most 1 s: also how late buffered frames and lost consumers are
 * noticed, and the interval with heartbeats off. At least 100 ms: a pump costs system calls on
 * every connection, and a very short heartbeat must not turn it into a busy loop.
 */
int64_t evloop_pump_interval_ms(int64_t heartbeat_ms);

/*
 * Uniform in [0, 1), for backoff jitter: it only has to differ between processes that failed
 * together, not be unpredictable. The default source is random(), seeded once per process
 * (from getrandom, else pid and clock) on first use, so daemons do not retry in step.
 */
double evloop_random(void);
/* Tests: draw from source (values in [0, RAND_MAX], like random()); NULL restores random(). */
void evloop_random_source(long (*source)(void));

/* (Re)arm the one-shot timer ev for ms from now; -1 (logged) when libevent refuses. */
int evloop_arm(struct event *ev, int64_t ms);
/* Set up ev as a timer calling fn(arg) every ms, and start it. -1 when libevent refuses. */
int evloop_every(struct event *ev, struct event_base *base, int64_t ms, event_callback_fn fn,
                 void *arg) WARN_UNUSED;

/*
 * Graded shutdown. The first SIGTERM or SIGINT asks the daemon to drain (take no new work,
 * finish what it holds); a second one to exit fast; SIGQUIT to exit at once. What each step
 * does is the daemon's: fn(arg, step, signal_name) runs from the loop.
 */
typedef enum { EVLOOP_DRAIN = 0, EVLOOP_EXIT_FAST, EVLOOP_EXIT_NOW } evloop_stop_t;
typedef void (*evloop_stop_fn)(void *arg, evloop_stop_t step, const char *signal_name);

typedef struct evloop_signals {
    struct event term, intr, quit, hup;
    int terms; /* SIGTERM/SIGINT seen */
    evloop_stop_fn fn;
    void (*reload)(void *arg); /* SIGHUP; NULL: logged and ignored */
    void *arg;
} evloop_signals_t;

/* Watch SIGTERM, SIGINT, SIGQUIT and SIGHUP on base (SIGHUP no longer ends the process, and
 * does nothing but a log line until evloop_signals_on_reload); -1 when libevent refuses. */
int evloop_signals_init(evloop_signals_t *s, struct event_base *base, evloop_stop_fn fn,
                        void *arg) WARN_UNUSED;
/* SIGHUP calls fn(arg) (the arg given to evloop_signals_init) from the loop. */
void evloop_signals_on_reload(evloop_signals_t *s, void (*fn)(void *arg));
/*
 * For a drain that blocks outside the loop (the executor waits on the database): from now on
 * a SIGTERM or SIGINT writes message to stderr and _exits with EXIT_RUNTIME right in the
 * signal handler. message must outlive the process.
 */
void evloop_signals_exit_on_next(evloop_signals_t *s, const char *message);
/* "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", else "signal". */
const char *evloop_signal_name(int sig);

/* When the service manager wants a watchdog (notify.h), set up ev as a timer on base sending
 * WATCHDOG=1 at half its interval: a loop stuck longer than the interval stops the pings and
 * gets the daemon restarted. Nothing otherwise. -1 when libevent refuses. */
int evloop_watchdog(struct event *ev, struct event_base *base) WARN_UNUSED;

#endif
