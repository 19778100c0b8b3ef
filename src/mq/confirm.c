/* Publisher-confirm bookkeeping for one channel: outstanding delivery tags and their outcome. */
#include <stdlib.h>
#include "mq/confirm.h"

#define TAG_NONE UINT64_MAX

const char *confirm_result_name(confirm_result_t r)
{
    switch (r) {
    case CONFIRM_PENDING: return "pending";
    case CONFIRM_ACKED: return "acked";
    case CONFIRM_NACKED: return "nacked";
    case CONFIRM_RETURNED: return "returned";
    case CONFIRM_LOST: return "lost";
    case CONFIRM_UNKNOWN: return "unknown";
    }
    return "unknown";
}

void confirm_init(confirm_tracker_t *t)
{
    t->next_tag = 1;
    t->entries = NULL;
    t->len = t->cap = 0;
}

void confirm_free(confirm_tracker_t *t)
{
    free(t->entries);
    confirm_init(t);
}

void confirm_reset(confirm_tracker_t *t)
{
    for (size_t i = 0; i < t->len; i++) {
        if (t->entries[i].result == CONFIRM_PENDING)
            t->entries[i].result = CONFIRM_LOST;
        t->entries[i].tag = 0;
    }
    t->next_tag = 1;
}

uint64_t confirm_track(confirm_tracker_t *t, uint64_t cookie)
{
    if (t->len == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        confirm_entry_t *grown = realloc(t->entries, cap * sizeof *grown);
        if (!grown)
            return TAG_NONE;
        t->entries = grown;
        t->cap = cap;
    }
    uint64_t tag = t->next_tag++;
    t->entries[t->len++] = (confirm_entry_t){
        .tag = tag, .result = CONFIRM_PENDING, .cookie = cookie};
    return tag;
}

/* Index of the first entry with entry.tag >= tag. Tags never decrease along the array:
 * entries of closed channels carry 0 and sit in front of the live channel's tags. */
static size_t lower_bound(const confirm_tracker_t *t, uint64_t tag)
{
    size_t lo = 0, hi = t->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->entries[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static confirm_entry_t *find(const confirm_tracker_t *t, uint64_t tag)
{
    if (tag == 0)
        return NULL;
    size_t i = lower_bound(t, tag);
    return i < t->len && t->entries[i].tag == tag ? &t->entries[i] : NULL;
}

/* Record the broker's answer `to` for tag (or everything up to it); finished entries keep their
 * first outcome, so the ack that follows a basic.return leaves RETURNED in place. */
static void record_outcome(confirm_tracker_t *t, uint64_t tag, bool multiple, confirm_result_t to)
{
    if (tag == 0)
        return;
    if (!multiple) {
        confirm_entry_t *e = find(t, tag);
        if (e && e->result == CONFIRM_PENDING)
            e->result = to;
        return;
    }
    for (size_t i = lower_bound(t, 1); i < t->len && t->entries[i].tag <= tag; i++)
        if (t->entries[i].result == CONFIRM_PENDING)
            t->entries[i].result = to;
}

void confirm_on_ack(confirm_tracker_t *t, uint64_t tag, bool multiple)
{
    record_outcome(t, tag, multiple, CONFIRM_ACKED);
}

void confirm_on_nack(confirm_tracker_t *t, uint64_t tag, bool multiple)
{
    record_outcome(t, tag, multiple, CONFIRM_NACKED);
}

void confirm_on_return(confirm_tracker_t *t, uint64_t tag)
{
    record_outcome(t, tag, false, CONFIRM_RETURNED);
}

confirm_result_t confirm_result(const confirm_tracker_t *t, uint64_t tag)
{
    const confirm_entry_t *e = find(t, tag);
    return e ? e->result : CONFIRM_UNKNOWN;
}

confirm_result_t confirm_result_cookie(const confirm_tracker_t *t, uint64_t cookie)
{
    /* Newest first: callers ask about what they just published. */
    for (size_t i = t->len; i-- > 0;)
        if (t->entries[i].cookie == cookie)
            return t->entries[i].result;
    return CONFIRM_UNKNOWN;
}

size_t confirm_pending(const confirm_tracker_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->len; i++)
        n += t->entries[i].result == CONFIRM_PENDING;
    return n;
}

void confirm_collect(confirm_tracker_t *t)
{
    size_t kept = 0;
    for (size_t i = 0; i < t->len; i++)
        if (t->entries[i].result == CONFIRM_PENDING)
            t->entries[kept++] = t->entries[i];
    t->len = kept;
}
