/*
 * A message body as its frames arrive: kept whole up to a limit, and above it only its first
 * bytes, so a body the header frame announces as huge is never allocated. Pure logic, no I/O;
 * frames.c feeds it the body frames of a delivery or a returned message.
 */
#ifndef WARREN_MQ_BODY_H
#define WARREN_MQ_BODY_H

#include "warren/common.h"

typedef struct body_acc {
    uint64_t size; /* announced by the header frame */
    uint64_t got;  /* received so far */
    char *buf;     /* malloc'd: the body, or its first `keep` bytes; NULL when keep is 0 */
    size_t keep;   /* bytes buf holds at most */
    size_t kept;   /* bytes buf holds */
    bool cut;      /* size is over the limit: only the prefix is kept */
} body_acc_t;

/* Expect `size` bytes: all of them when size <= limit, else the first min(prefix, size). -1 when
 * out of memory (nothing to free then). Free with body_acc_free() or hand buf over with
 * body_acc_take(). */
int body_acc_start(body_acc_t *a, uint64_t size, size_t limit, size_t prefix) WARN_UNUSED;
/* One body frame's bytes: kept while there is room, counted in any case. -1 when they run past
 * the announced size (the peer broke the protocol). */
int body_acc_add(body_acc_t *a, const void *bytes, size_t n) WARN_UNUSED;
/* Every announced byte came. */
bool body_acc_complete(const body_acc_t *a);
/* The kept bytes, ownership passing to the caller (free()); the accumulator is empty after. */
void *body_acc_take(body_acc_t *a, size_t *len);
void body_acc_free(body_acc_t *a);

#endif
