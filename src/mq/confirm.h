/*
 * Publisher-confirm bookkeeping for one channel: which delivery tags are outstanding and how
 * each one ended (ack, nack, returned). Pure logic, no I/O; the MessageClient feeds it frames.
 */
#ifndef WARREN_MQ_CONFIRM_H
#define WARREN_MQ_CONFIRM_H

#include "warren/common.h"

typedef enum {
    CONFIRM_PENDING = 0,
    CONFIRM_ACKED,
    CONFIRM_NACKED,
    CONFIRM_RETURNED, /* basic.return seen (mandatory, unroutable); the ack after it keeps it */
    CONFIRM_LOST,     /* channel or connection closed before an answer */
    CONFIRM_UNKNOWN,  /* no such tag or cookie (never tracked, or already collected) */
} confirm_result_t;

typedef struct confirm_entry {
    uint64_t tag;
    confirm_result_t result;
    uint64_t cookie; /* caller's id for the publish (e.g. index in a batch) */
} confirm_entry_t;

typedef struct confirm_tracker {
    uint64_t next_tag;        /* tag the next publish will get; starts at 1 after confirm.select */
    confirm_entry_t *entries; /* outstanding and finished-but-uncollected, ordered by tag */
    size_t len, cap;
} confirm_tracker_t;

void confirm_init(confirm_tracker_t *t);
void confirm_free(confirm_tracker_t *t);
/*
 * Channel (re)opened with confirm.select: tags restart at 1, outstanding entries become LOST.
 * Entries of the old channel keep their cookie but their tag becomes 0: tags of the new
 * channel must never match them. Find them with confirm_result_cookie().
 */
void confirm_reset(confirm_tracker_t *t);
/* Register a publish about to be sent; returns its delivery tag. -1 (as uint64 max) on OOM. */
uint64_t confirm_track(confirm_tracker_t *t, uint64_t cookie);
/* basic.ack / basic.nack with the multiple flag. Unknown tags are ignored. */
void confirm_on_ack(confirm_tracker_t *t, uint64_t tag, bool multiple);
void confirm_on_nack(confirm_tracker_t *t, uint64_t tag, bool multiple);
/*
 * basic.return carries no delivery tag; the client finds the tag from the returned message's
 * message_id and reports it here. The ack that follows a return does not undo RETURNED.
 */
void confirm_on_return(confirm_tracker_t *t, uint64_t tag);
confirm_result_t confirm_result(const confirm_tracker_t *t, uint64_t tag);
/* Result of the entry tracked with `cookie` (survives confirm_reset); newest match wins. */
confirm_result_t confirm_result_cookie(const confirm_tracker_t *t, uint64_t cookie);
size_t confirm_pending(const confirm_tracker_t *t);
/* Drop every finished entry, keeping the pending ones in order (keeps memory bounded). */
void confirm_collect(confirm_tracker_t *t);
const char *confirm_result_name(confirm_result_t r);

#endif
