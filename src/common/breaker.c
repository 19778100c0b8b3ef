/* Circuit breaker state machine (closed / open / half-open); pure, the caller passes the clock. */
#include <string.h>
#include "warren/breaker.h"
#include "warren/log.h"

const char *breaker_state_name(breaker_state_t s)
{
    switch (s) {
    case BREAKER_CLOSED: return "closed";
    case BREAKER_OPEN: return "open";
    case BREAKER_HALF_OPEN: return "half_open";
    }
    return "unknown";
}

void breaker_init(breaker_t *b, const char *name, int failure_threshold, int success_threshold,
                  int64_t open_timeout_ms)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    breaker_set_limits(b, failure_threshold, success_threshold, open_timeout_ms);
    b->state = BREAKER_CLOSED;
}

void breaker_set_limits(breaker_t *b, int failure_threshold, int success_threshold,
                        int64_t open_timeout_ms)
{
    /* A threshold below 1 would open (or close) on nothing; treat it as 1. */
    b->failure_threshold = failure_threshold > 0 ? failure_threshold : 1;
    b->success_threshold = success_threshold > 0 ? success_threshold : 1;
    b->open_timeout_ms = open_timeout_ms > 0 ? open_timeout_ms : 0;
}

/* Every state change goes through here so each one is logged exactly once. */
static void move_to(breaker_t *b, breaker_state_t to, int64_t now_ms)
{
    breaker_state_t from = b->state;
    b->state = to;
    b->probe_in_flight = false;
    b->half_open_successes = 0;
    if (to == BREAKER_OPEN) {
        b->opened_at_ms = now_ms;
        b->times_opened++;
    }
    if (to == BREAKER_CLOSED)
        b->consecutive_failures = 0;
    log_kv(to == BREAKER_OPEN ? LOG_WARN : LOG_INFO, "circuit breaker state change", "breaker",
           b->name ? b->name : "", "from", breaker_state_name(from), "to", breaker_state_name(to),
           NULL);
}

bool breaker_allow(breaker_t *b, int64_t now_ms)
{
    if (b->state == BREAKER_OPEN && now_ms - b->opened_at_ms >= b->open_timeout_ms)
        move_to(b, BREAKER_HALF_OPEN, now_ms);

    switch (b->state) {
    case BREAKER_CLOSED: break;
    case BREAKER_OPEN: b->calls_rejected++; return false;
    case BREAKER_HALF_OPEN:
        /* One probe at a time: a second caller must not pile onto a broker that may be down. */
        if (b->probe_in_flight) {
            b->calls_rejected++;
            return false;
        }
        b->probe_in_flight = true;
        break;
    }
    b->calls_allowed++;
    return true;
}

void breaker_record_success(breaker_t *b, int64_t now_ms)
{
    b->successes++;
    switch (b->state) {
    case BREAKER_CLOSED: b->consecutive_failures = 0; break;
    case BREAKER_HALF_OPEN:
        b->probe_in_flight = false;
        if (++b->half_open_successes >= b->success_threshold)
            move_to(b, BREAKER_CLOSED, now_ms);
        break;
    case BREAKER_OPEN:
        /* A call admitted before the breaker opened finished late: it proves little. */
        break;
    }
}

void breaker_record_failure(breaker_t *b, int64_t now_ms)
{
    b->failures++;
    switch (b->state) {
    case BREAKER_CLOSED:
        if (++b->consecutive_failures >= b->failure_threshold)
            move_to(b, BREAKER_OPEN, now_ms);
        break;
    case BREAKER_HALF_OPEN: move_to(b, BREAKER_OPEN, now_ms); break;
    case BREAKER_OPEN: break;
    }
}

void breaker_reconnected(breaker_t *b, int64_t now_ms)
{
    if (b->state == BREAKER_OPEN)
        move_to(b, BREAKER_HALF_OPEN, now_ms);
}

int64_t breaker_retry_in_ms(const breaker_t *b, int64_t now_ms)
{
    if (b->state != BREAKER_OPEN)
        return 0;
    int64_t left = b->opened_at_ms + b->open_timeout_ms - now_ms;
    return left > 0 ? left : 0;
}
