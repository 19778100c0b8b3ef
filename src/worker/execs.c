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

static void remember(execs_t *t, const execs_record_t *x)
{
    t->recent[t->recent_next] = (execs_key_t){x->execution_id, x->attempt};
    t->recent_next = (t->recent_next + 1) % EXECS_RECENT;
    if (t->recent_len < EXECS_RECENT)
        t->recent_len++;
}

void execs_remove(execs_t *t, execs_record_t *x, bool finished)
{
    if (finished)
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

bool execs_recent(const execs_t *t, int64_t execution_id, int attempt)
{
    for (size_t i = 0; i < t->recent_len; i++)
        if (t->recent[i].execution_id == execution_id && t->recent[i].attempt == attempt)
            return true;
    return false;
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
