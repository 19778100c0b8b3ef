/* The wanted topology as data, its comparison with the live broker, and 406 explanations. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "mq/topology_plan.h"
#include "warren/topology.h"
#include "warren/utf8.h"

/* ---- building plans ---- */

static void set_name(char *dst, const char *a, const char *b, const char *c)
{
    snprintf(dst, TOPO_NAME_MAX, "%s%s%s", a, b ? b : "", c ? c : "");
}

static void add_int_arg(topo_queue_t *q, const char *key, int64_t v)
{
    topo_arg_t *a = &q->args[q->n_args++];
    a->key = key;
    a->is_int = true;
    a->i = v;
}

static void add_str_arg(topo_queue_t *q, const char *key, const char *v)
{
    topo_arg_t *a = &q->args[q->n_args++];
    a->key = key;
    a->is_int = false;
    set_name(a->s, v, NULL, NULL);
}

/* The queue dead-letters into exchange (with routing_key, when not NULL). */
static void add_dead_lettering(topo_queue_t *q, const char *exchange, const char *routing_key)
{
    add_str_arg(q, "x-dead-letter-exchange", exchange);
    if (routing_key)
        add_str_arg(q, "x-dead-letter-routing-key", routing_key);
    if (q->quorum) {
        /* Quorum queues dead-letter at-least-once only with reject-publish overflow; with the
         * default drop-head they fall back to at-most-once. */
        add_str_arg(q, "x-dead-letter-strategy", "at-least-once");
        add_str_arg(q, "x-overflow", "reject-publish");
    }
}

static topo_queue_t *add_queue(topo_plan_t *p, const warren_config_t *cfg, const char *name)
{
    topo_queue_t *q = &p->queues[p->n_queues++];
    set_name(q->name, name, NULL, NULL);
    q->quorum = cfg->rabbitmq.queue_type == QUEUE_QUORUM;
    if (q->quorum)
        add_str_arg(q, "x-queue-type", "quorum");
    return q;
}

static void add_exchange(topo_plan_t *p, const char *name, const char *type)
{
    topo_exchange_t *e = &p->exchanges[p->n_exchanges++];
    set_name(e->name, name, NULL, NULL);
    e->type = type;
}

static void add_binding(topo_plan_t *p, const char *exchange, const char *queue, const char *key)
{
    topo_binding_t *b = &p->bindings[p->n_bindings++];
    set_name(b->exchange, exchange, NULL, NULL);
    set_name(b->queue, queue, NULL, NULL);
    set_name(b->key, key ? key : "", NULL, NULL);
    b->any_key = key == NULL;
}

void topo_plan_common(const warren_config_t *cfg, topo_plan_t *p)
{
    const typeof(cfg->rabbitmq) *r = &cfg->rabbitmq;
    memset(p, 0, sizeof *p);
    snprintf(p->hint, sizeof p->hint, "warren topology declare");
    add_exchange(p, r->exchanges.executions, "topic");
    if (r->dead_letter.enabled) {
        /* Fanout: dead letters keep their original routing key, which no fixed binding
         * key of a direct exchange would match. */
        add_exchange(p, r->dead_letter.exchange, "fanout");
        topo_queue_t *dlq = add_queue(p, cfg, r->dead_letter.queue);
        add_int_arg(dlq, "x-message-ttl", r->dead_letter.ttl_ms);
        dlq->n_legacy_args = dlq->n_args; /* before issue 7: no parking */
        /* What outlives the retention is not dropped: the default exchange routes it to the
         * parking queue by name, which keeps it until the executor records it. */
        add_dead_lettering(dlq, "", r->dead_letter.parking_queue);
        add_binding(p, r->dead_letter.exchange, r->dead_letter.queue, NULL);
        add_queue(p, cfg, r->dead_letter.parking_queue);
    }
    add_queue(p, cfg, r->queues.results);
    add_binding(p, r->exchanges.executions, r->queues.results, "execution.status.#");
    add_binding(p, r->exchanges.executions, r->queues.results, "execution.completed.#");
    topo_queue_t *hb = add_queue(p, cfg, r->queues.heartbeats);
    add_int_arg(hb, "x-message-ttl", TOPO_HEARTBEAT_TTL_MS);
    add_binding(p, r->exchanges.executions, r->queues.heartbeats, "worker.heartbeat.#");
}

typedef int (*worker_name_fn)(const char *worker_id, char *buf, size_t len);

/* An empty plan for one of a worker's queues: its name and binding key (TOPO_NAME_MAX bytes
 * each) from the worker id; -1 when the id is not valid. */
static int worker_plan(topo_plan_t *p, const char *worker_id, worker_name_fn queue_of,
                       worker_name_fn key_of, char *queue, char *key)
{
    memset(p, 0, sizeof *p);
    return queue_of(worker_id, queue, TOPO_NAME_MAX) == 0 &&
                   key_of(worker_id, key, TOPO_NAME_MAX) == 0
               ? 0
               : -1;
}

int topo_plan_worker(const warren_config_t *cfg, const char *worker_id, topo_plan_t *p)
{
    const typeof(cfg->rabbitmq) *r = &cfg->rabbitmq;
    char queue[TOPO_NAME_MAX], key[TOPO_NAME_MAX];
    if (worker_plan(p, worker_id, topo_worker_queue, topo_dispatch_key, queue, key) != 0)
        return -1;
    snprintf(p->hint, sizeof p->hint, "warren topology declare --worker %s", worker_id);
    topo_queue_t *q = add_queue(p, cfg, queue);
    add_int_arg(q, "x-message-ttl", r->worker_queue_ttl_ms);
    if (r->dead_letter.enabled)
        add_dead_lettering(q, r->dead_letter.exchange, NULL);
    add_binding(p, r->exchanges.executions, queue, key);
    return 0;
}

int topo_plan_control(const warren_config_t *cfg, const char *worker_id, topo_plan_t *p)
{
    const typeof(cfg->rabbitmq) *r = &cfg->rabbitmq;
    char queue[TOPO_NAME_MAX], key[TOPO_NAME_MAX];
    if (worker_plan(p, worker_id, topo_control_queue, topo_cancel_key, queue, key) != 0)
        return -1;
    add_exchange(p, r->exchanges.executions, "topic");
    /* Not add_queue(): a quorum queue can be neither exclusive nor transient. */
    topo_queue_t *q = &p->queues[p->n_queues++];
    set_name(q->name, queue, NULL, NULL);
    q->transient = true;
    if (r->dead_letter.enabled) /* a control message the worker refuses is kept there */
        add_str_arg(q, "x-dead-letter-exchange", r->dead_letter.exchange);
    add_binding(p, r->exchanges.executions, queue, key);
    return 0;
}

const topo_arg_t *topo_queue_arg(const topo_queue_t *q, const char *key)
{
    for (size_t i = 0; i < q->n_args; i++)
        if (!strcmp(q->args[i].key, key))
            return &q->args[i];
    return NULL;
}

/* ---- comparing with the management API ---- */

static const char *json_str(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

static bool json_true(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static void want_text(const topo_arg_t *a, char *buf, size_t len)
{
    if (a->is_int)
        snprintf(buf, len, "%" PRId64, a->i);
    else
        snprintf(buf, len, "'%s'", a->s);
}

/* The broker's value for a drift line, cut to fit on a character boundary. */
static void live_text(json_object *v, char *buf, size_t len)
{
    bool quoted = json_object_is_type(v, json_type_string);
    const char *s = quoted ? json_object_get_string(v)
                           : json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    if (quoted)
        snprintf(buf, len, "'%.*s'", utf8_prec(s, len - 3), s);
    else
        snprintf(buf, len, "%.*s", utf8_prec(s, len - 1), s);
}

static bool arg_matches(const topo_arg_t *a, json_object *v)
{
    if (a->is_int)
        return json_object_is_type(v, json_type_int) && json_object_get_int64(v) == a->i;
    return json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), a->s);
}

int topo_compare_exchange(const topo_exchange_t *want, json_object *live, const char *hint,
                          FILE *out)
{
    int drifts = 0;
    const char *type = json_str(live, "type");
    if (!type || strcmp(type, want->type) != 0) {
        fprintf(out,
                "exchange '%s' has type=%s but configuration wants %s: delete the exchange "
                "(its bindings go with it), then run `%s`\n",
                want->name, type ? type : "(unknown)", want->type, hint);
        drifts++;
    }
    if (!json_true(live, "durable")) {
        fprintf(out,
                "exchange '%s' is not durable and vanishes when the broker restarts: delete "
                "it, then run `%s`\n",
                want->name, hint);
        drifts++;
    }
    return drifts;
}

static const char queue_remedy[] =
    "drain and delete the queue, then run `%s` (or change the configuration to match)";

static int compare_queue_args(const topo_queue_t *want, json_object *args, const char *hint,
                              FILE *out)
{
    int drifts = 0;
    char w[TOPO_NAME_MAX + 8], l[TOPO_NAME_MAX + 8];
    for (size_t i = 0; i < want->n_args; i++) {
        const topo_arg_t *a = &want->args[i];
        json_object *v = NULL;
        if (!strcmp(a->key, "x-queue-type") ||
            (json_object_object_get_ex(args, a->key, &v) && arg_matches(a, v)))
            continue;
        want_text(a, w, sizeof w);
        if (v) {
            live_text(v, l, sizeof l);
            fprintf(out, "queue '%s' has %s=%s but configuration wants %s: ", want->name, a->key, l,
                    w);
        } else {
            fprintf(out, "queue '%s' has no %s but configuration wants %s: ", want->name, a->key,
                    w);
        }
        fprintf(out, queue_remedy, hint);
        fputc('\n', out);
        drifts++;
    }
    json_object_object_foreach(args, key, val) {
        if (topo_queue_arg(want, key) || !strcmp(key, "x-queue-type"))
            continue;
        live_text(val, l, sizeof l);
        fprintf(out, "queue '%s' has %s=%s which configuration does not set: ", want->name, key, l);
        fprintf(out, queue_remedy, hint);
        fputc('\n', out);
        drifts++;
    }
    return drifts;
}

int topo_compare_queue(const topo_queue_t *want, json_object *live, const char *hint, FILE *out)
{
    int drifts = 0;
    const char *type = json_str(live, "type");
    const char *want_type = want->quorum ? "quorum" : "classic";
    if (type && strcmp(type, want_type) != 0) {
        fprintf(out, "queue '%s' is a %s queue but configuration wants %s: ", want->name, type,
                want_type);
        fprintf(out, queue_remedy, hint);
        fputc('\n', out);
        drifts++;
    }
    if (!json_true(live, "durable")) {
        fprintf(out, "queue '%s' is not durable and loses its messages when the broker restarts: ",
                want->name);
        fprintf(out, queue_remedy, hint);
        fputc('\n', out);
        drifts++;
    }
    json_object *args = NULL;
    if (!json_object_object_get_ex(live, "arguments", &args) ||
        !json_object_is_type(args, json_type_object))
        args = NULL;
    json_object *empty = args ? NULL : json_object_new_object();
    drifts += compare_queue_args(want, args ? args : empty, hint, out);
    json_object_put(empty);
    return drifts;
}

static bool live_has_key(json_object *live, const char *key)
{
    size_t n = json_object_is_type(live, json_type_array) ? json_object_array_length(live) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *k = json_str(json_object_array_get_idx(live, i), "routing_key");
        if (k && (!key || !strcmp(k, key)))
            return true;
    }
    return false;
}

int topo_compare_bindings(const topo_plan_t *p, const char *exchange, const char *queue,
                          json_object *live, FILE *out)
{
    int drifts = 0;
    bool any_key = false;
    for (size_t i = 0; i < p->n_bindings; i++) {
        const topo_binding_t *b = &p->bindings[i];
        if (strcmp(b->exchange, exchange) != 0 || strcmp(b->queue, queue) != 0)
            continue;
        any_key |= b->any_key;
        if (live_has_key(live, b->any_key ? NULL : b->key))
            continue;
        fprintf(out, "queue '%s' is not bound to exchange '%s'", queue, exchange);
        if (!b->any_key)
            fprintf(out, " with key '%s'", b->key);
        fprintf(out, ": run `%s`\n", p->hint);
        drifts++;
    }
    size_t n = json_object_is_type(live, json_type_array) ? json_object_array_length(live) : 0;
    for (size_t i = 0; i < n && !any_key; i++) {
        const char *k = json_str(json_object_array_get_idx(live, i), "routing_key");
        bool wanted = false;
        for (size_t j = 0; k && j < p->n_bindings && !wanted; j++)
            wanted = !strcmp(p->bindings[j].exchange, exchange) &&
                     !strcmp(p->bindings[j].queue, queue) && !strcmp(p->bindings[j].key, k);
        if (k && !wanted) {
            fprintf(out,
                    "queue '%s' has an extra binding from exchange '%s' with key '%s' that "
                    "routes other messages here: unbind it\n",
                    queue, exchange, k);
            drifts++;
        }
    }
    return drifts;
}

/* ---- explaining a 406 ---- */

/* Copy the text between `start` and `stop` after `from` into buf; NULL when absent. */
static const char *span_after(const char *from, const char *start, const char *stop, char *buf,
                              size_t len)
{
    const char *a = from ? strstr(from, start) : NULL;
    if (!a)
        return NULL;
    a += strlen(start);
    const char *b = stop ? strstr(a, stop) : a + strlen(a);
    if (!b)
        return NULL;
    snprintf(buf, len, "%.*s", (int)utf8_cut(a, (size_t)(b - a), len - 1), a);
    return b;
}

/* RabbitMQ 3.10 prints values as "'60000'", "the value 'attune.dlx' of type 'longstr'" or
 * "none". Reduce them to the value; false for "none". */
static bool broker_value(const char *text, char *buf, size_t len)
{
    if (!strcmp(text, "none"))
        return false;
    if (!span_after(text, "the value '", "' of type", buf, len) &&
        !span_after(text, "'", "'", buf, len))
        snprintf(buf, len, "%.*s", utf8_prec(text, len - 1), text);
    return true;
}

void topo_explain_refusal(const char *what, const char *name, const char *reply, char *err,
                          size_t errlen)
{
    char arg[64], recv[TOPO_NAME_MAX], cur[TOPO_NAME_MAX], rv[TOPO_NAME_MAX], cv[TOPO_NAME_MAX];
    const char *p = span_after(reply, "inequivalent arg '", "'", arg, sizeof arg);
    p = span_after(p, "received ", " but current is ", recv, sizeof recv);
    p = span_after(p, " but current is ", NULL, cur, sizeof cur);
    if (!p) {
        snprintf(err, errlen,
                 "%s '%s': the broker refused the declaration (%s); see `warren "
                 "topology verify`",
                 what, name, reply);
        return;
    }
    bool has_r = broker_value(recv, rv, sizeof rv), has_c = broker_value(cur, cv, sizeof cv);
    if (has_r && !rv[0] && !strcmp(arg, "x-dead-letter-exchange"))
        snprintf(rv, sizeof rv, "'' (the default exchange)");
    const char *remedy = !strcmp(what, "queue") ? "drain and delete the queue"
                                                : "delete the exchange";
    if (has_c && has_r)
        snprintf(err, errlen,
                 "%s '%s' exists with %s=%s but configuration wants %s: %s or change "
                 "the configuration to match; see `warren topology verify`",
                 what, name, arg, cv, rv, remedy);
    else if (has_r)
        snprintf(err, errlen,
                 "%s '%s' exists without %s but configuration wants %s=%s: %s or "
                 "change the configuration to match; see `warren topology verify`",
                 what, name, arg, arg, rv, remedy);
    else
        snprintf(err, errlen,
                 "%s '%s' exists with %s=%s which configuration does not set: %s or "
                 "change the configuration to match; see `warren topology verify`",
                 what, name, arg, has_c ? cv : "?", remedy);
}
