/* The worker's outbox: confirmed publishes in order, retried with backoff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "worker/outbox.h"

void outbox_init(outbox_t *o, size_t cap, int64_t base_ms, int64_t max_ms)
{
    memset(o, 0, sizeof *o);
    o->cap = cap;
    backoff_init(&o->backoff, base_ms, max_ms);
}

void outbox_free(outbox_t *o)
{
    outbox_msg_t *m;
    while ((m = outbox_pop(o)) != NULL)
        outbox_msg_free(m);
}

outbox_msg_t *outbox_msg_new(outbox_kind_t kind, int64_t execution_id, int attempt, msg_type_t type,
                             const char *message_id, const char *routing_key, char *body,
                             size_t body_len)
{
    outbox_msg_t *m = calloc(1, sizeof *m);
    if (!m) {
        free(body);
        return NULL;
    }
    m->body = body;
    m->body_len = body_len;
    m->kind = kind;
    m->execution_id = execution_id;
    m->attempt = attempt;
    m->type = type;
    snprintf(m->message_id, sizeof m->message_id, "%s", message_id);
    snprintf(m->routing_key, sizeof m->routing_key, "%s", routing_key);
    return m;
}

void outbox_msg_free(outbox_msg_t *m)
{
    if (!m)
        return;
    free(m->body);
    free(m);
}

int outbox_push(outbox_t *o, outbox_msg_t *m, int64_t now_ms)
{
    if (o->len >= o->cap)
        return -1;
    m->next = NULL;
    m->queued_ms = now_ms;
    if (o->tail)
        o->tail->next = m;
    else
        o->head = m;
    o->tail = m;
    o->len++;
    return 0;
}

outbox_msg_t *outbox_due(const outbox_t *o, int64_t now_ms)
{
    if (!o->head || (o->failing && now_ms < o->retry_at_ms))
        return NULL;
    return o->head;
}

outbox_msg_t *outbox_take_unsent_running(outbox_t *o, int64_t execution_id, int attempt)
{
    outbox_msg_t *prev = NULL;
    size_t i = 0;
    for (outbox_msg_t *m = o->head; m; prev = m, m = m->next, i++) {
        if (m->kind != OUTBOX_RUNNING || m->execution_id != execution_id || m->attempt != attempt)
            continue;
        if (m->tries > 0 || i < o->inflight)
            return NULL;
        if (prev)
            prev->next = m->next;
        else
            o->head = m->next;
        if (o->tail == m)
            o->tail = prev;
        o->len--;
        m->next = NULL;
        return m;
    }
    return NULL;
}

outbox_msg_t *outbox_pop(outbox_t *o)
{
    outbox_msg_t *m = o->head;
    if (!m)
        return NULL;
    o->head = m->next;
    if (!o->head)
        o->tail = NULL;
    o->len--;
    if (o->inflight > 0)
        o->inflight--;
    m->next = NULL;
    o->failing = false;
    backoff_reset(&o->backoff);
    return m;
}

int64_t outbox_failed(outbox_t *o, int64_t now_ms, int64_t min_ms, double unit_random)
{
    int64_t delay = backoff_next(&o->backoff, unit_random);
    if (delay < min_ms)
        delay = min_ms;
    if (o->head)
        o->head->tries++;
    o->failing = true;
    o->retry_at_ms = now_ms + delay;
    return delay;
}

void outbox_defer(outbox_t *o, int64_t now_ms, int64_t delay_ms)
{
    o->failing = true;
    o->retry_at_ms = now_ms + delay_ms;
}

void outbox_retry_now(outbox_t *o)
{
    o->retry_at_ms = 0;
}
