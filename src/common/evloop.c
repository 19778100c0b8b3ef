/* The event-loop scaffolding both daemons share: timers, jitter, pump interval, signals,
 * the watchdog. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "warren/evloop.h"
#include "warren/log.h"
#include "warren/notify.h"

/* libevent 2.1's event_base_free deletes every event still pending or active on the base
 * (evmap_delete_all_) before freeing it; it never frees an event itself. */
void evloop_base_free(struct event_base *base)
{
    if (base)
        event_base_free(base);
}

struct timeval evloop_tv(int64_t ms)
{
    if (ms < 0)
        ms = 0;
    return (struct timeval){.tv_sec = (time_t)(ms / 1000),
                            .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

int64_t evloop_pump_interval_ms(int64_t heartbeat_ms)
{
    if (heartbeat_ms <= 0)
        return EVLOOP_PUMP_MAX_MS;
    int64_t ms = heartbeat_ms / 4;
    return ms < EVLOOP_PUMP_MIN_MS   ? EVLOOP_PUMP_MIN_MS
           : ms > EVLOOP_PUMP_MAX_MS ? EVLOOP_PUMP_MAX_MS
                                     : ms;
}

static long (*random_source)(void);

static long seeded_random(void)
{
    static bool seeded;
    if (!seeded) {
        unsigned seed;
        if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
            seed = (unsigned)getpid() ^ (unsigned)now_wall_ms();
        srandom(seed);
        seeded = true;
    }
    return random();
}

double evloop_random(void)
{
    long r = random_source ? random_source() : seeded_random();
    return (double)r / ((double)RAND_MAX + 1.0);
}

void evloop_random_source(long (*source)(void))
{
    random_source = source;
}

int evloop_arm(struct event *ev, int64_t ms)
{
    struct timeval tv = evloop_tv(ms);
    if (evtimer_add(ev, &tv) == 0)
        return 0;
    log_kv(LOG_ERROR, "cannot arm a timer", NULL);
    return -1;
}

int evloop_every(struct event *ev, struct event_base *base, int64_t ms, event_callback_fn fn,
                 void *arg)
{
    struct timeval tv = evloop_tv(ms);
    if (event_assign(ev, base, -1, EV_PERSIST, fn, arg) != 0 || event_add(ev, &tv) != 0)
        return -1;
    return 0;
}

const char *evloop_signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGHUP: return "SIGHUP";
    default: return "signal";
    }
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    evloop_signals_t *s = arg;
    int sig = (int)fd;
    evloop_stop_t step = sig == SIGQUIT    ? EVLOOP_EXIT_NOW
                         : s->terms++ == 0 ? EVLOOP_DRAIN
                                           : EVLOOP_EXIT_FAST;
    s->fn(s->arg, step, evloop_signal_name(sig));
}

static void on_hup(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    evloop_signals_t *s = arg;
    if (s->reload)
        s->reload(s->arg);
    else
        log_kv(LOG_INFO, "SIGHUP ignored: nothing to reload", NULL);
}

int evloop_signals_init(evloop_signals_t *s, struct event_base *base, evloop_stop_fn fn, void *arg)
{
    s->terms = 0;
    s->fn = fn;
    s->reload = NULL;
    s->arg = arg;
    if (evsignal_assign(&s->term, base, SIGTERM, on_signal, s) != 0 ||
        evsignal_assign(&s->intr, base, SIGINT, on_signal, s) != 0 ||
        evsignal_assign(&s->quit, base, SIGQUIT, on_signal, s) != 0 ||
        evsignal_assign(&s->hup, base, SIGHUP, on_hup, s) != 0)
        return -1;
    return event_add(&s->term, NULL) == 0 && event_add(&s->intr, NULL) == 0 &&
                   event_add(&s->quit, NULL) == 0 && event_add(&s->hup, NULL) == 0
               ? 0
               : -1;
}

void evloop_signals_on_reload(evloop_signals_t *s, void (*fn)(void *arg))
{
    s->reload = fn;
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    notify_watchdog();
}

int evloop_watchdog(struct event *ev, struct event_base *base)
{
    int64_t ms = notify_watchdog_interval_ms();
    if (ms <= 0)
        return 0;
    notify_watchdog(); /* the first now: the interval counts from the start */
    return evloop_every(ev, base, ms, on_watchdog, NULL);
}

static const char *exit_message;
static size_t exit_message_len;

static void exit_at_once(int sig)
{
    (void)sig;
    ssize_t ignored = write(STDERR_FILENO, exit_message, exit_message_len);
    (void)ignored;
    _exit(EXIT_RUNTIME);
}

void evloop_signals_exit_on_next(evloop_signals_t *s, const char *message)
{
    exit_message = message;
    exit_message_len = strlen(message);
    /* libevent's handlers first: deleting their events restores the previous handlers, which
     * must not later overwrite this one. */
    event_del(&s->term);
    event_del(&s->intr);
    struct sigaction sa = {.sa_handler = exit_at_once};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}
