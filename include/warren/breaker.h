/*
 * Circuit breaker: closed -> open after failure_threshold consecutive failures -> half-open
 * after open_timeout_ms, or at once when a fresh connection proves the peer is back (admits
 * one probe at a time) -> closed after success_threshold successes; any failure while
 * half-open reopens it. Pure logic: the clock is passed in.
 */
#ifndef WARREN_BREAKER_H
#define WARREN_BREAKER_H

#include "warren/common.h"

typedef enum { BREAKER_CLOSED = 0, BREAKER_OPEN, BREAKER_HALF_OPEN } breaker_state_t;

typedef struct breaker {
    const char *name; /* for logs; borrowed */
    int failure_threshold;
    int success_threshold;
    int64_t open_timeout_ms;
    breaker_state_t state;
    int consecutive_failures;
    int half_open_successes;
    bool probe_in_flight; /* half-open admits one call at a time */
    int64_t opened_at_ms;
    /* counters for health and metrics */
    uint64_t calls_allowed, calls_rejected, successes, failures, times_opened;
} breaker_t;

void breaker_init(breaker_t *b, const char *name, int failure_threshold, int success_threshold,
                  int64_t open_timeout_ms);
/* New thresholds and open timeout (a reload), state and counters kept: the next failure or
 * success, or breaker_allow, is judged by them. */
void breaker_set_limits(breaker_t *b, int failure_threshold, int success_threshold,
                        int64_t open_timeout_ms);
/* May a call proceed now? false while open (fail fast). Moves open -> half-open on timeout. */
bool breaker_allow(breaker_t *b, int64_t now_ms);
void breaker_record_success(breaker_t *b, int64_t now_ms);
void breaker_record_failure(breaker_t *b, int64_t now_ms);
/* A new connection to the peer succeeded: an open breaker half-opens now instead of waiting
 * out open_timeout_ms, so the next call is its probe. No change in the other states. */
void breaker_reconnected(breaker_t *b, int64_t now_ms);
const char *breaker_state_name(breaker_state_t s);
/* Milliseconds until an open breaker admits a probe (0 when not open). */
int64_t breaker_retry_in_ms(const breaker_t *b, int64_t now_ms);

#endif
