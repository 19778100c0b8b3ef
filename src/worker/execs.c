/* Bookkeeping of the executions a worker holds, and the keys of those it finished recently. */
#include <stdlib.h>
#include <string.h>
#include "worker/execs.h"

void execs_init(execs_t *t)
{
    memset(t, 0, sizeof *t);
}

static void record_free(execs_record_t *x)
{
    free(x->tags);
    free(x->params);
    free(x->kept);
    free(x);
}

void execs_free(execs_t *t)
{
    execs_record_t *x = t->head;
    while (x) {
        execs_record_t *next = x->next;
        record_free(x);
        x = next;
    }
    for (size_t i = 0; i < t->recent_len; i++)
        free(t->recent[i].kept);
    execs_init(t);
}

execs_record_t *execs_find(const execs_t *t, int64_t execution_id, int attempt)
{
    /* Linear: a worker holds at most about twice its concurrency. */
    for (execs_record_t *x = t->head; x; x = x->next)
        if (x->execution_id == execution_id && x->attempt == attempt)
            return x;
    return NULL;
}

execs_record_t *execs_add(execs_t *t, int64_t execution_id, int attempt)
{
    execs_record_t *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->execution_id = execution_id;
    x->attempt = attempt;
    x->stage = STAGE_HELD;
    x->prev = t->tail;
    if (t->tail)
        t->tail->next = x;
    else
        t->head = x;
    t->tail = x;
    t->count[STAGE_HELD]++;
    return x;
}

static void drop_kept(execs_t *t, execs_recent_t *r)
{
    t->recent_bytes -= r->kept_bytes;
    free(r->kept);
    r->kept = NULL;
    r->kept_bytes = 0;
}

/* Over the memory budget: the oldest completions go first (their keys stay). */
static void reclaim(execs_t *t)
{
    size_t oldest = t->recent_len < EXECS_RECENT ? 0 : t->recent_next;
    for (size_t i = 0; i < t->recent_len && t->recent_bytes > EXECS_RECENT_BYTES; i++)
        drop_kept(t, &t->recent[(oldest + i) % EXECS_RECENT]);
}

/* Takes x's kept completion over. */
static void remember(execs_t *t, execs_record_t *x)
{
    execs_recent_t *r = &t->recent[t->recent_next];
    drop_kept(t, r); /* the oldest key, when the ring is full */
    *r = (execs_recent_t){x->execution_id, x->attempt, x->kept, x->kept_bytes};
    t->recent_bytes += x->kept_bytes;
    x->kept = NULL;
    x->kept_bytes = 0;
    t->recent_next = (t->recent_next + 1) % EXECS_RECENT;
    if (t->recent_len < EXECS_RECENT)
        t->recent_len++;
    reclaim(t);
}

void execs_remove(execs_t *t, execs_record_t *x, bool finished)
{
    if (finished || x->kept)
        remember(t, x);
    if (x->prev)
        x->prev->next = x->next;
    else
        t->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        t->tail = x->prev;
    t->count[x->stage]--;
    record_free(x);
}

void execs_set_stage(execs_t *t, execs_record_t *x, execs_stage_t stage)
{
    t->count[x->stage]--;
    t->count[stage]++;
    x->stage = stage;
}

size_t execs_count(const execs_t *t, execs_stage_t stage)
{
    return t->count[stage];
}

execs_record_t *execs_first_held(const execs_t *t)
{
    for (execs_record_t *x = t->head; x; x = x->next)
        if (x->stage == STAGE_HELD)
            return x;
    return NULL;
}

static const execs_recent_t *recent_find(const execs_t *t, int64_t execution_id, int attempt)
{
    for (size_t i = 0; i < t->recent_len; i++)
        if (t->recent[i].execution_id == execution_id && t->recent[i].attempt == attempt)
            return &t->recent[i];
    return NULL;
}

bool execs_recent(const execs_t *t, int64_t execution_id, int attempt)
{
    return recent_find(t, execution_id, attempt) != NULL;
}

bool execs_recent_take(execs_t *t, int64_t execution_id, int attempt,
                       report_msg_completion_t **kept, size_t *kept_bytes)
{
    execs_recent_t *r = (execs_recent_t *)recent_find(t, execution_id, attempt);
    if (!r)
        return false;
    *kept = r->kept;
    *kept_bytes = r->kept_bytes;
    t->recent_bytes -= r->kept_bytes;
    *r = (execs_recent_t){0}; /* a free slot: the ring overwrites it in turn */
    return true;
}

int execs_add_tag(execs_record_t *x, uint64_t tag)
{
    if (x->n_tags == x->cap_tags) {
        size_t cap = x->cap_tags ? x->cap_tags * 2 : 2;
        uint64_t *grown = realloc(x->tags, cap * sizeof *grown);
        if (!grown)
            return -1;
        x->tags = grown;
        x->cap_tags = cap;
    }
    x->tags[x->n_tags++] = tag;
    return 0;
}

int execs_set_params(execs_record_t *x, const char *json, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, json, len);
    copy[len] = '\0';
    free(x->params);
    x->params = copy;
    x->params_len = len;
    return 0;
}
