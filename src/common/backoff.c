/* Exponential backoff with cap and jitter; pure, the random number is passed in. */
#include "warren/backoff.h"

void backoff_init(backoff_t *b, int64_t base_ms, int64_t cap_ms)
{
    b->base_ms = base_ms > 0 ? base_ms : 1;
    b->cap_ms = cap_ms >= b->base_ms ? cap_ms : b->base_ms;
    b->attempt = 0;
}

int64_t backoff_next(backoff_t *b, double unit_random)
{
    int64_t d = b->base_ms;
    /* Double without overflowing: stop as soon as the cap is reached. */
    for (int i = 0; i < b->attempt && d < b->cap_ms; i++)
        d = d > b->cap_ms / 2 ? b->cap_ms : d * 2;
    if (d > b->cap_ms)
        d = b->cap_ms;
    if (b->attempt < 1000000)
        b->attempt++;
    if (unit_random < 0 || unit_random != unit_random)
        unit_random = 0;
    if (unit_random >= 1)
        unit_random = 0.999999;
    int64_t half = d / 2;
    return half + (int64_t)((double)(d - half) * unit_random);
}

void backoff_reset(backoff_t *b)
{
    b->attempt = 0;
}
