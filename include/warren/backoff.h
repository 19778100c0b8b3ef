/*
 * Exponential backoff with a cap and jitter, for anything that retries against a peer that
 * may be down (reconnects, resubscribes). Pure: the caller supplies the random number.
 */
#ifndef WARREN_BACKOFF_H
#define WARREN_BACKOFF_H

#include "warren/common.h"

typedef struct backoff {
    int64_t base_ms; /* first delay (before jitter) */
    int64_t cap_ms;  /* no delay exceeds this */
    int attempt;     /* failures since the last reset */
} backoff_t;

void backoff_init(backoff_t *b, int64_t base_ms, int64_t cap_ms);
/*
 * Delay before the next attempt after one more failure: d = min(cap, base * 2^attempt),
 * jittered into [d/2, d) by unit_random in [0, 1) so peers that failed together do not
 * retry together. Increments attempt.
 */
int64_t backoff_next(backoff_t *b, double unit_random);
/* A success: the next failure starts again from base. */
void backoff_reset(backoff_t *b);

#endif
