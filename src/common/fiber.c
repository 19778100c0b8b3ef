/* Fibers on the event loop: own stacks (ucontext), waits that yield to the loop, fiber locks. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "warren/evloop.h"
#include "warren/fiber.h"
#include "warren/log.h"

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif

#ifdef FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
/* AddressSanitizer's redzones make warren's own frames several times larger. */
#define FIBER_STACK_BYTES (8 * 1024 * 1024)
#else
/*
 * Pages are committed only when touched: the size is a bound, not a cost. The bound is set by
 * what a broker can send: rabbitmq-c decodes (and amqp_table_clone copies) a header table
 * recursively with no depth limit, about 116 bytes of stack per level, and one content header
 * frame (at most the negotiated frame_max, 128 KiB) holds up to 18,700 nested tables (7 bytes
 * each): 2.2 MB. A fiber reading frames from any queue a stranger can publish to must survive
 * that message (512 KiB did not: a crash loop, the message being redelivered at each start).
 * tests/integration/mq_deep_headers.sh sends it.
 */
#define FIBER_STACK_BYTES (4 * 1024 * 1024)
#endif
/* Stacks kept for reuse after their fiber ended. */
#define FIBER_SPARE_STACKS 16
/* What a stack kept for reuse keeps committed at its top; the rest goes back to the kernel, so
 * that one deep message does not leave megabytes resident in each spare stack. */
#define FIBER_WARM_BYTES (64 * 1024)

typedef struct fiber {
    ucontext_t ctx;
    void *stack; /* owned: FIBER_STACK_BYTES, the lowest page a guard */
    struct event ev;
    struct event_base *base; /* borrowed */
    const char *name;
    fiber_fn fn;
    void *arg;
    short what;   /* the libevent flags that woke it */
    bool done;    /* fn returned: the stack may be reused */
    bool granted; /* woken by fiber_cond_signal or fiber_unlock, not by its deadline */
    struct fiber *next_waiter;
    struct fiber *prev, *next; /* every live fiber */
    void *asan_fake;
} fiber_t;

static ucontext_t loop_ctx;
static fiber_t *current;
static fiber_t *fibers; /* live ones */
static size_t n_fibers;
static bool cancelling;
static void *spare[FIBER_SPARE_STACKS];
static size_t n_spare;
static fiber_t *dead; /* ended, freed at the loop's next turn (never inside their own event) */
static struct event reap_ev;
static struct event_base *reap_base;
static const char loop_owner; /* fiber_lock's owner outside any fiber */

#ifdef FIBER_ASAN
static const void *loop_bottom;
static size_t loop_size;
#endif

static void switch_start(void **fake, const void *bottom, size_t size)
{
#ifdef FIBER_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)fake;
    (void)bottom;
    (void)size;
#endif
}

static void switch_finish(void *fake, bool to_fiber)
{
#ifdef FIBER_ASAN
    if (to_fiber)
        __sanitizer_finish_switch_fiber(fake, &loop_bottom, &loop_size);
    else
        __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    (void)fake;
    (void)to_fiber;
#endif
}

static void *stack_new(void)
{
    if (n_spare > 0)
        return spare[--n_spare];
    void *s = mmap(NULL, FIBER_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (s == MAP_FAILED)
        return NULL;
    long page = sysconf(_SC_PAGESIZE);
    (void)mprotect(s, page > 0 ? (size_t)page : 4096, PROT_NONE); /* an overflow faults */
    return s;
}

static void stack_free(void *s)
{
    if (n_spare < FIBER_SPARE_STACKS) {
        /* The stack grows down from its top: drop the pages below the warm part. */
        (void)madvise(s, FIBER_STACK_BYTES - FIBER_WARM_BYTES, MADV_DONTNEED);
        spare[n_spare++] = s;
    } else
        munmap(s, FIBER_STACK_BYTES);
}

static void unlink_fiber(fiber_t *f)
{
    if (f->prev)
        f->prev->next = f->next;
    else
        fibers = f->next;
    if (f->next)
        f->next->prev = f->prev;
    n_fibers--;
}

static void reap(void)
{
    while (dead) {
        fiber_t *f = dead;
        dead = f->next;
        stack_free(f->stack);
        free(f);
    }
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    reap();
}

/*
 * Save the current context in from and continue in to. Under AddressSanitizer not with
 * swapcontext: its interceptor reports "doesn't fully support makecontext/swapcontext" into
 * the sanitizer log, which the sanitize run counts as a finding; getcontext and setcontext are
 * the same switch (the annotations above keep ASan's view of the stacks right).
 */
static void jump(ucontext_t *from, ucontext_t *to)
{
#ifdef FIBER_ASAN
    volatile bool back = false;
    getcontext(from);
    if (back)
        return;
    back = true;
    setcontext(to);
#else
    swapcontext(from, to);
#endif
}

/* From the loop into f, until f waits or ends. */
static void resume(fiber_t *f)
{
    current = f;
    void *fake = NULL;
    switch_start(&fake, f->stack, FIBER_STACK_BYTES);
    jump(&loop_ctx, &f->ctx);
    switch_finish(fake, false);
    current = NULL;
    if (f->done) {
        event_del(&f->ev);
        unlink_fiber(f);
        f->next = dead;
        dead = f;
        event_active(&reap_ev, EV_TIMEOUT, 0);
    }
}

/* From the fiber f back to the loop. */
static void yield(fiber_t *f)
{
#ifdef FIBER_ASAN
    switch_start(f->done ? NULL : &f->asan_fake, loop_bottom, loop_size);
#endif
    jump(&f->ctx, &loop_ctx);
#ifdef FIBER_ASAN
    switch_finish(f->asan_fake, true);
#endif
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    fiber_t *f = arg;
    f->what = what;
    resume(f);
}

static void trampoline(void)
{
    fiber_t *f = current;
    switch_finish(NULL, true);
    f->fn(f->arg);
    f->done = true;
    yield(f); /* never returns: resume() retires it */
}

int fiber_start(struct event_base *base, const char *name, fiber_fn fn, void *arg)
{
    if (!reap_base) {
        reap_base = base;
        event_assign(&reap_ev, base, -1, 0, on_reap, NULL);
    }
    fiber_t *f = calloc(1, sizeof *f);
    if (f)
        f->stack = stack_new();
    if (!f || !f->stack || getcontext(&f->ctx) != 0) {
        if (f && f->stack)
            stack_free(f->stack);
        free(f);
        log_kv(LOG_ERROR, "out of memory starting a fiber", "fiber", name, NULL);
        return -1;
    }
    f->base = base;
    f->name = name;
    f->fn = fn;
    f->arg = arg;
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = FIBER_STACK_BYTES;
    f->ctx.uc_link = NULL;
    makecontext(&f->ctx, trampoline, 0);
    event_assign(&f->ev, base, -1, 0, on_wake, f);
    f->next = fibers;
    if (fibers)
        fibers->prev = f;
    fibers = f;
    n_fibers++;
    event_active(&f->ev, EV_TIMEOUT, 0);
    return 0;
}

bool fiber_active(void)
{
    return current != NULL;
}

size_t fiber_count(void)
{
    return n_fibers;
}

static int poll_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int64_t left = deadline_ms == INT64_MAX ? -1 : deadline_ms - now_mono_ms();
        int n = poll(&p, 1, left < 0 && deadline_ms != INT64_MAX ? 0 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n;
        short r = (short)(p.revents & (POLLIN | POLLOUT));
        if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
            r = (short)(r | events); /* ready: the next read or write says what went wrong */
        return r;
    }
}

/* Park the current fiber on its event until it fires; returns the flags. */
static short park(fiber_t *f, int fd, short ev_events, int64_t deadline_ms)
{
    event_assign(&f->ev, f->base, fd, ev_events, on_wake, f);
    if (deadline_ms == INT64_MAX) {
        event_add(&f->ev, NULL);
    } else {
        struct timeval tv = evloop_tv(deadline_ms - now_mono_ms());
        event_add(&f->ev, &tv);
    }
    f->what = 0;
    yield(f);
    event_del(&f->ev);
    return f->what;
}

int fiber_wait_fd(int fd, short events, int64_t deadline_ms)
{
    fiber_t *f = current;
    if (!f)
        return poll_fd(fd, events, deadline_ms);
    if (cancelling)
        return -1;
    short ev = (short)((events & POLLIN ? EV_READ : 0) | (events & POLLOUT ? EV_WRITE : 0));
    short what = park(f, fd, ev, deadline_ms);
    if (cancelling)
        return -1;
    return (what & EV_READ ? POLLIN : 0) | (what & EV_WRITE ? POLLOUT : 0);
}

void fiber_sleep_ms(int64_t ms)
{
    fiber_t *f = current;
    if (!f) {
        struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
        nanosleep(&t, NULL);
        return;
    }
    if (!cancelling)
        (void)park(f, -1, 0, now_mono_ms() + ms);
}

void fiber_cancel_all(void)
{
    cancelling = true;
    for (fiber_t *f = fibers; f; f = f->next)
        if (f != current && event_pending(&f->ev, EV_TIMEOUT | EV_READ | EV_WRITE, NULL))
            event_active(&f->ev, EV_TIMEOUT, 0);
}

void fiber_cleanup(void)
{
    reap();
    if (reap_base)
        event_del(&reap_ev);
    reap_base = NULL;
    while (n_spare > 0)
        munmap(spare[--n_spare], FIBER_STACK_BYTES);
}

/* ---- waiting for each other ---- */

static const void *self(void)
{
    return current ? (const void *)current : &loop_owner;
}

static void cond_remove(fiber_cond_t *c, fiber_t *f)
{
    fiber_t *prev = NULL;
    for (fiber_t *t = c->head; t; prev = t, t = t->next_waiter)
        if (t == f) {
            if (prev)
                prev->next_waiter = f->next_waiter;
            else
                c->head = f->next_waiter;
            if (c->tail == f)
                c->tail = prev;
            break;
        }
    f->next_waiter = NULL;
}

/* Queue the current fiber on c and park it; true when it was signalled (and not cancelled). */
static bool cond_park(fiber_cond_t *c, fiber_t *f, int64_t deadline_ms)
{
    f->granted = false;
    f->next_waiter = NULL;
    if (c->tail)
        c->tail->next_waiter = f;
    else
        c->head = f;
    c->tail = f;
    (void)park(f, -1, 0, deadline_ms);
    if (!f->granted)
        cond_remove(c, f);
    return f->granted;
}

/* Take the first waiter off c and wake it; NULL when none waits. */
static fiber_t *cond_pop(fiber_cond_t *c)
{
    fiber_t *f = c->head;
    if (!f)
        return NULL;
    c->head = f->next_waiter;
    if (!c->head)
        c->tail = NULL;
    f->next_waiter = NULL;
    f->granted = true;
    event_active(&f->ev, EV_TIMEOUT, 0);
    return f;
}

int fiber_cond_wait(fiber_cond_t *c, int64_t deadline_ms)
{
    fiber_t *f = current;
    if (!f || cancelling)
        return 0;
    bool signalled = cond_park(c, f, deadline_ms);
    if (signalled && cancelling)
        fiber_cond_signal(c); /* pass the wake on */
    return signalled && !cancelling;
}

void fiber_cond_signal(fiber_cond_t *c)
{
    (void)cond_pop(c);
}

size_t fiber_cond_waiters(const fiber_cond_t *c)
{
    size_t n = 0;
    for (const fiber_t *f = c->head; f; f = f->next_waiter)
        n++;
    return n;
}

int fiber_lock(fiber_lock_t *l, int64_t deadline_ms)
{
    const void *me = self();
    if (l->owner == me) {
        l->depth++;
        return 1;
    }
    if (!l->owner && !l->waiters.head) {
        l->owner = me;
        l->depth = 1;
        return 1;
    }
    fiber_t *f = current;
    if (!f || cancelling)
        return 0;
    if (cond_park(&l->waiters, f, deadline_ms) && !cancelling)
        return 1;         /* fiber_unlock made it the owner */
    if (l->owner == me) { /* granted, then cancelled: pass it on */
        l->depth = 1;
        fiber_unlock(l);
    }
    return 0;
}

void fiber_unlock(fiber_lock_t *l)
{
    if (!l->owner || --l->depth > 0)
        return;
    l->owner = NULL;
    fiber_t *next = cond_pop(&l->waiters);
    if (next) {
        l->owner = next;
        l->depth = 1;
    }
}

bool fiber_lock_held(const fiber_lock_t *l)
{
    return l->owner != NULL;
}

bool fiber_lock_mine(const fiber_lock_t *l)
{
    return l->owner == self();
}
