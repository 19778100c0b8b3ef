/* Broker topology: names derived from worker ids, declarations, and the drift report. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mq/http_get.h"
#include "mq/mq_internal.h"
#include "mq/topology_plan.h"
#include "warren/ids.h"
#include "warren/log.h"
#include "warren/topology.h"
#include "warren/utf8.h"

static int format_name(char *buf, size_t len, const char *prefix, const char *worker_id,
                       const char *suffix)
{
    if (!ids_worker_valid(worker_id))
        return -1;
    int n = snprintf(buf, len, "%s%s%s", prefix, worker_id, suffix);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

int topo_worker_queue(const char *worker_id, char *buf, size_t len)
{
    return format_name(buf, len, "worker.", worker_id, ".executions");
}

int topo_dispatch_key(const char *worker_id, char *buf, size_t len)
{
    return format_name(buf, len, "execution.dispatch.worker.", worker_id, "");
}

int topo_control_queue(const char *worker_id, char *buf, size_t len)
{
    return format_name(buf, len, "worker.", worker_id, ".control");
}

int topo_cancel_key(const char *worker_id, char *buf, size_t len)
{
    return format_name(buf, len, "execution.cancel.worker.", worker_id, "");
}

/* ---- declaring ---- */

/* The rabbitmq-c table for a queue's arguments; entries point into q. */
static amqp_table_t queue_table(const topo_queue_t *q, amqp_table_entry_t *e)
{
    for (size_t i = 0; i < q->n_args; i++) {
        const topo_arg_t *a = &q->args[i];
        e[i].key = amqp_cstring_bytes(a->key);
        if (a->is_int) {
            e[i].value.kind = AMQP_FIELD_KIND_I64;
            e[i].value.value.i64 = a->i;
        } else {
            e[i].value.kind = AMQP_FIELD_KIND_UTF8;
            e[i].value.value.bytes = amqp_cstring_bytes(a->s);
        }
    }
    return (amqp_table_t){.num_entries = (int)q->n_args, .entries = e};
}

/* Check the reply of the last declaration. A refusal closed the channel: explain it and
 * reopen, so the client stays usable. */
static int check_reply(mq_client_t *c, const char *what, const char *name, char *err, size_t errlen)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(mq_conn(c));
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    char reply[ERRBUF_SIZE], reopen[ERRBUF_SIZE];
    mq_describe_reply(r, reply, sizeof reply);
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD)
        topo_explain_refusal(what, name, reply, err, errlen);
    else
        snprintf(err, errlen, "declaring %s '%s' failed: %s", what, name, reply);
    if (mq_reopen_channel(c, reopen, sizeof reopen) != 0)
        log_kv(LOG_WARN, "reopening the channel after a refused declaration failed", "error",
               reopen, NULL);
    return -1;
}

static int declare_exchange(mq_client_t *c, const topo_exchange_t *x, char *err, size_t errlen)
{
    amqp_exchange_declare(mq_conn(c), (amqp_channel_t)mq_channel(c), amqp_cstring_bytes(x->name),
                          amqp_cstring_bytes(x->type), 0, 1, 0, 0, amqp_empty_table);
    return check_reply(c, "exchange", x->name, err, errlen);
}

static int declare_queue_args(mq_client_t *c, const topo_queue_t *q, size_t n_args, char *err,
                              size_t errlen)
{
    amqp_table_entry_t entries[TOPO_MAX_ARGS];
    bool t = q->transient;
    amqp_table_t args = queue_table(q, entries);
    args.num_entries = (int)n_args;
    amqp_queue_declare(mq_conn(c), (amqp_channel_t)mq_channel(c), amqp_cstring_bytes(q->name), 0,
                       !t, t, t, args);
    return check_reply(c, "queue", q->name, err, errlen);
}

/*
 * A queue an older warren declared with fewer arguments (the dead-letter queue before it parked
 * what outlives its retention) cannot be redeclared without draining it, and refusing to start
 * over it would stop every executor and worker at an upgrade: it is accepted as it is, with a
 * warning, and `warren topology verify` reports the drift until an operator replaces it.
 */
static int declare_queue(mq_client_t *c, const topo_queue_t *q, char *err, size_t errlen)
{
    if (declare_queue_args(c, q, q->n_args, err, errlen) == 0)
        return 0;
    char legacy[ERRBUF_SIZE];
    if (q->n_legacy_args == 0 || !mq_connected(c) ||
        declare_queue_args(c, q, q->n_legacy_args, legacy, sizeof legacy) != 0)
        return -1;
    log_kv(LOG_WARN,
           "queue declared by an older warren: kept as it is, without what this version adds "
           "(docs/architecture.md says how to replace it)",
           "queue", q->name, "error", err, NULL);
    return 0;
}

static int declare_binding(mq_client_t *c, const topo_binding_t *b, char *err, size_t errlen)
{
    amqp_queue_bind(mq_conn(c), (amqp_channel_t)mq_channel(c), amqp_cstring_bytes(b->queue),
                    amqp_cstring_bytes(b->exchange), amqp_cstring_bytes(b->key), amqp_empty_table);
    return check_reply(c, "binding of queue", b->queue, err, errlen);
}

static int apply_plan(mq_client_t *c, const topo_plan_t *p, char *err, size_t errlen)
{
    if (mq_connect(c, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < p->n_exchanges; i++)
        if (declare_exchange(c, &p->exchanges[i], err, errlen) != 0)
            return -1;
    for (size_t i = 0; i < p->n_queues; i++)
        if (declare_queue(c, &p->queues[i], err, errlen) != 0)
            return -1;
    for (size_t i = 0; i < p->n_bindings; i++)
        if (declare_binding(c, &p->bindings[i], err, errlen) != 0)
            return -1;
    for (size_t i = 0; i < p->n_queues; i++)
        log_kv(LOG_DEBUG, "queue declared", "queue", p->queues[i].name, NULL);
    return 0;
}

int topo_declare_common(mq_client_t *c, const warren_config_t *cfg, char *err, size_t errlen)
{
    topo_plan_t p;
    topo_plan_common(cfg, &p);
    return apply_plan(c, &p, err, errlen);
}

/* A worker's plan could not be made: its id is no valid worker id. */
static int invalid_worker(const char *worker_id, char *err, size_t errlen)
{
    snprintf(err, errlen, "invalid worker id '%.*s': %s", utf8_prec(worker_id, 80), worker_id,
             IDS_WORKER_RULE);
    return -1;
}

int topo_declare_worker(mq_client_t *c, const warren_config_t *cfg, const char *worker_id,
                        char *err, size_t errlen)
{
    topo_plan_t p;
    if (topo_plan_worker(cfg, worker_id, &p) != 0)
        return invalid_worker(worker_id, err, errlen);
    if (!cfg->rabbitmq.dead_letter.enabled)
        log_kv(LOG_WARN,
               "dead-lettering is disabled: dispatches that expire in this worker queue are "
               "dropped by the broker, and only the executor's timeout monitor fails them",
               "worker", worker_id, "queue", p.queues[0].name, NULL);
    return apply_plan(c, &p, err, errlen);
}

int topo_declare_control(mq_client_t *c, const warren_config_t *cfg, const char *worker_id,
                         char *err, size_t errlen)
{
    topo_plan_t p;
    if (topo_plan_control(cfg, worker_id, &p) != 0)
        return invalid_worker(worker_id, err, errlen);
    return apply_plan(c, &p, err, errlen);
}

int topo_queue_messages(mq_client_t *c, const char *queue, int64_t *messages, char *err,
                        size_t errlen)
{
    if (!mq_connected(c)) {
        snprintf(err, errlen, "not connected");
        return -1;
    }
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(mq_conn(c), (amqp_channel_t)mq_channel(c),
                                                     amqp_cstring_bytes(queue), 1, 0, 0, 0,
                                                     amqp_empty_table);
    if (check_reply(c, "queue", queue, err, errlen) != 0 || !ok)
        return -1;
    *messages = ok->message_count;
    return 0;
}

int topo_declare_events(mq_client_t *c, const char *exchange, char *err, size_t errlen)
{
    if (!mq_connected(c) && mq_try_connect(c) != MQ_OK) {
        snprintf(err, errlen, "not connected");
        return -1;
    }
    topo_exchange_t x = {.type = "topic"};
    snprintf(x.name, sizeof x.name, "%s", exchange);
    return declare_exchange(c, &x, err, errlen);
}

/* ---- taking a queue back (a retired worker's, docs/retries.md) ---- */

static char *bytes_dup(amqp_bytes_t b)
{
    char *s = b.len ? malloc(b.len + 1) : NULL;
    if (s) {
        memcpy(s, b.bytes, b.len);
        s[b.len] = '\0';
    }
    return s;
}

void topo_taken_free(topo_taken_t *t)
{
    free(t->body);
    free(t->message_id);
    free(t->routing_key);
    memset(t, 0, sizeof *t);
}

int topo_take(mq_client_t *c, const char *queue, size_t max_body, topo_taken_t *out, bool *missing,
              char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    *missing = false;
    if (!mq_connected(c)) {
        snprintf(err, errlen, "not connected");
        return -1;
    }
    amqp_connection_state_t conn = mq_conn(c);
    amqp_channel_t ch = (amqp_channel_t)mq_channel(c);
    amqp_rpc_reply_t r = amqp_basic_get(conn, ch, amqp_cstring_bytes(queue), 0);
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
        ((amqp_channel_close_t *)r.reply.decoded)->reply_code == AMQP_NOT_FOUND) {
        char reopen[ERRBUF_SIZE];
        *missing = true;
        if (mq_reopen_channel(c, reopen, sizeof reopen) != 0) {
            snprintf(err, errlen, "reopening the channel after a missing queue: %s", reopen);
            return -1;
        }
        return 0;
    }
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        char reply[ERRBUF_SIZE];
        mq_describe_reply(r, reply, sizeof reply);
        snprintf(err, errlen, "basic.get from '%s' failed: %s", queue, reply);
        return -1;
    }
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        return 0;
    amqp_basic_get_ok_t *ok = r.reply.decoded;
    uint64_t tag = ok->delivery_tag;
    char *key = bytes_dup(ok->routing_key);
    amqp_message_t m;
    r = amqp_read_message(conn, ch, &m, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        free(key);
        snprintf(err, errlen, "reading a message from '%s' failed", queue);
        mq_connection_lost(c, "reading a taken message failed");
        return -1;
    }
    int rc = 1;
    if (m.body.len > max_body) {
        snprintf(err, errlen, "a message of %zu bytes in '%s' (at most %zu taken back)", m.body.len,
                 queue, max_body);
        free(key);
        rc = -1;
    } else {
        out->tag = tag;
        out->routing_key = key;
        out->body_len = m.body.len;
        out->body = bytes_dup(m.body);
        if (!out->body)
            out->body = calloc(1, 1);
        if (m.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
            out->message_id = bytes_dup(m.properties.message_id);
        if (!out->body) {
            topo_taken_free(out);
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    amqp_destroy_message(&m);
    return rc;
}

int topo_ack_taken(mq_client_t *c, uint64_t tag, char *err, size_t errlen)
{
    if (!mq_connected(c) ||
        amqp_basic_ack(mq_conn(c), (amqp_channel_t)mq_channel(c), tag, 1) != AMQP_STATUS_OK) {
        snprintf(err, errlen, "basic.ack of taken messages failed");
        return -1;
    }
    return 0;
}

int topo_delete_queue(mq_client_t *c, const char *queue, bool if_empty, char *err, size_t errlen)
{
    if (!mq_connected(c)) {
        snprintf(err, errlen, "not connected");
        return -1;
    }
    amqp_queue_delete(mq_conn(c), (amqp_channel_t)mq_channel(c), amqp_cstring_bytes(queue), 0,
                      if_empty ? 1 : 0);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(mq_conn(c));
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    bool gone = r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
                r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
                ((amqp_channel_close_t *)r.reply.decoded)->reply_code == AMQP_NOT_FOUND;
    char reply[ERRBUF_SIZE], reopen[ERRBUF_SIZE];
    mq_describe_reply(r, reply, sizeof reply);
    snprintf(err, errlen, "deleting queue '%s' failed: %s", queue, reply);
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        mq_reopen_channel(c, reopen, sizeof reopen))
        log_kv(LOG_WARN, "reopening the channel after a refused delete failed", "error", reopen,
               NULL);
    return gone ? 0 : -1;
}

/* ---- verifying ---- */

typedef struct verify {
    mq_client_t *c;
    bool mgmt; /* management API available: full comparison */
    http_url_t url;
    char vhost[3 * TOPO_NAME_MAX]; /* percent-encoded */
    int timeout_ms;
    FILE *out;
    int drifts;
    char missing[8][TOPO_NAME_MAX]; /* objects reported missing: their bindings need no line */
    size_t n_missing;
} verify_t;

/* Percent-encode everything but RFC 3986 unreserved characters, for URL path segments. */
static void pct_encode(const char *s, char *buf, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (isalnum(ch) || strchr("-._~", ch)) {
            buf[o++] = (char)ch;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        }
    }
    buf[o] = '\0';
}

/* GET a management API path. 1 with *out parsed, 0 on 404, -1 on any other failure. */
static int mgmt_get(verify_t *v, const char *path, json_object **out)
{
    char err[ERRBUF_SIZE];
    http_response_t r;
    *out = NULL;
    if (http_get(&v->url, path, v->timeout_ms, &r, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "management API unreachable", "error", err, "path", path, NULL);
        return -1;
    }
    int rc = r.status == 404 ? 0 : -1;
    if (r.status == 200) {
        *out = json_tokener_parse(r.body);
        rc = *out ? 1 : -1;
    }
    if (rc < 0) {
        char status[16];
        snprintf(status, sizeof status, "%d", r.status);
        log_kv(LOG_ERROR,
               r.status == 401 ? "management API refused the credentials"
                               : "unexpected management API answer",
               "status", status, "path", path, NULL);
    }
    http_response_free(&r);
    return rc;
}

/* Does the object exist? Without the management API a passive declare tells; a 404 closes
 * the channel, which is reopened. 1 exists, 0 missing, -1 cannot tell. */
static int passive_exists(verify_t *v, bool queue, const char *name)
{
    amqp_connection_state_t conn = mq_conn(v->c);
    amqp_channel_t ch = (amqp_channel_t)mq_channel(v->c);
    if (queue)
        amqp_queue_declare(conn, ch, amqp_cstring_bytes(name), 1, 0, 0, 0, amqp_empty_table);
    else
        amqp_exchange_declare(conn, ch, amqp_cstring_bytes(name), amqp_cstring_bytes(""), 1, 0, 0,
                              0, amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 1;
    char why[ERRBUF_SIZE];
    bool not_found = r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
                     r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
                     ((amqp_channel_close_t *)r.reply.decoded)->reply_code == AMQP_NOT_FOUND;
    if (mq_reopen_channel(v->c, why, sizeof why) != 0 || !not_found) {
        log_kv(LOG_ERROR, "passive declare failed", "error", why, queue ? "queue" : "exchange",
               name, NULL);
        return -1;
    }
    return 0;
}

/* Look an object up: 1 with *live (NULL without the management API), 0 missing, -1 error. */
static int lookup(verify_t *v, bool queue, const char *name, json_object **live)
{
    char enc[3 * TOPO_NAME_MAX], path[8 * TOPO_NAME_MAX];
    *live = NULL;
    if (!v->mgmt)
        return passive_exists(v, queue, name);
    pct_encode(name, enc, sizeof enc);
    snprintf(path, sizeof path, "/api/%s/%s/%s", queue ? "queues" : "exchanges", v->vhost, enc);
    return mgmt_get(v, path, live);
}

static void missing(verify_t *v, const char *what, const char *name, const char *hint)
{
    fprintf(v->out, "%s '%s' is missing: run `%s`\n", what, name, hint);
    v->drifts++;
    if (v->n_missing < sizeof v->missing / sizeof v->missing[0])
        snprintf(v->missing[v->n_missing++], TOPO_NAME_MAX, "%s", name);
}

static bool was_missing(const verify_t *v, const char *name)
{
    for (size_t i = 0; i < v->n_missing; i++)
        if (!strcmp(v->missing[i], name))
            return true;
    return false;
}

/* Look up the plan's i-th queue (or exchange) and report how it differs. */
static int verify_object(verify_t *v, const topo_plan_t *p, bool queue, size_t i)
{
    const char *name = queue ? p->queues[i].name : p->exchanges[i].name;
    json_object *live;
    int rc = lookup(v, queue, name, &live);
    if (rc == 0)
        missing(v, queue ? "queue" : "exchange", name, p->hint);
    else if (rc > 0 && live && queue)
        v->drifts += topo_compare_queue(&p->queues[i], live, p->hint, v->out);
    else if (rc > 0 && live)
        v->drifts += topo_compare_exchange(&p->exchanges[i], live, p->hint, v->out);
    json_object_put(live);
    return rc < 0 ? -1 : 0;
}

/* Bindings only through the management API, once per exchange/queue pair, and not for a
 * pair whose exchange or queue was already reported missing. */
static int verify_bindings(verify_t *v, const topo_plan_t *p)
{
    for (size_t i = 0; v->mgmt && i < p->n_bindings; i++) {
        const topo_binding_t *b = &p->bindings[i];
        bool same_pair = i > 0 && !strcmp(b->exchange, p->bindings[i - 1].exchange) &&
                         !strcmp(b->queue, p->bindings[i - 1].queue);
        if (same_pair || was_missing(v, b->exchange) || was_missing(v, b->queue))
            continue;
        char ex[3 * TOPO_NAME_MAX], q[3 * TOPO_NAME_MAX], path[10 * TOPO_NAME_MAX];
        pct_encode(b->exchange, ex, sizeof ex);
        pct_encode(b->queue, q, sizeof q);
        snprintf(path, sizeof path, "/api/bindings/%s/e/%s/q/%s", v->vhost, ex, q);
        json_object *live;
        int rc = mgmt_get(v, path, &live);
        if (rc < 0)
            return -1;
        if (rc > 0)
            v->drifts += topo_compare_bindings(p, b->exchange, b->queue, live, v->out);
        json_object_put(live);
    }
    return 0;
}

static int verify_plan(verify_t *v, const topo_plan_t *p)
{
    for (size_t i = 0; i < p->n_exchanges; i++)
        if (verify_object(v, p, false, i) != 0)
            return -1;
    for (size_t i = 0; i < p->n_queues; i++)
        if (verify_object(v, p, true, i) != 0)
            return -1;
    return verify_bindings(v, p);
}

static int verify_worker(verify_t *v, const warren_config_t *cfg, const char *worker_id)
{
    topo_plan_t p;
    if (topo_plan_worker(cfg, worker_id, &p) != 0) {
        fprintf(v->out, "worker id '%s' is invalid: %s\n", worker_id, IDS_WORKER_RULE);
        v->drifts++;
        return 0;
    }
    return verify_plan(v, &p);
}

/* Without explicit ids, every "worker.{id}.executions" queue on the broker is checked. */
static int verify_found_workers(verify_t *v, const warren_config_t *cfg)
{
    char path[4 * TOPO_NAME_MAX];
    json_object *list;
    snprintf(path, sizeof path, "/api/queues/%s?columns=name", v->vhost);
    if (mgmt_get(v, path, &list) <= 0)
        return -1;
    static const char prefix[] = "worker.", suffix[] = ".executions";
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    int found = 0, rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_object *name;
        const char *q = json_object_object_get_ex(json_object_array_get_idx(list, i), "name", &name)
                            ? json_object_get_string(name)
                            : "";
        size_t len = strlen(q);
        char id[TOPO_NAME_MAX];
        if (len <= strlen(prefix) + strlen(suffix) || strncmp(q, prefix, strlen(prefix)) != 0 ||
            strcmp(q + len - strlen(suffix), suffix) != 0)
            continue;
        snprintf(id, sizeof id, "%.*s", (int)(len - strlen(prefix) - strlen(suffix)),
                 q + strlen(prefix));
        rc = verify_worker(v, cfg, id);
        found++;
    }
    json_object_put(list);
    fprintf(v->out, "note: checked %d worker queue%s found on the broker\n", found,
            found == 1 ? "" : "s");
    return rc;
}

/* Management URL, with the AMQP URL's credentials and vhost unless it names its own user. */
static int setup_mgmt(verify_t *v, const warren_config_t *cfg, const char *mgmt_url)
{
    char err[ERRBUF_SIZE];
    if (http_url_parse(mgmt_url, &v->url, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "bad management URL", "error", err, NULL);
        return -1;
    }
    char *amqp = strdup(cfg->rabbitmq.url ? cfg->rabbitmq.url : "");
    struct amqp_connection_info info;
    if (!amqp || amqp_parse_url(amqp, &info) != AMQP_STATUS_OK) {
        log_kv(LOG_ERROR, "cannot read credentials and vhost from the AMQP URL", NULL);
        free(amqp);
        return -1;
    }
    if (!v->url.auth[0])
        snprintf(v->url.auth, sizeof v->url.auth, "%s:%s", info.user, info.password);
    pct_encode(info.vhost, v->vhost, sizeof v->vhost);
    free(amqp);
    v->mgmt = true;
    return 0;
}

int topo_verify(mq_client_t *c, const warren_config_t *cfg, const char *mgmt_url,
                const char *const *worker_ids, size_t n_workers, FILE *out)
{
    verify_t v = {.c = c, .out = out, .timeout_ms = cfg->rabbitmq.connect_timeout_ms};
    char err[ERRBUF_SIZE];
    if (mq_connect(c, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot connect to the broker", "error", err, NULL);
        return -1;
    }
    if (mgmt_url && *mgmt_url && setup_mgmt(&v, cfg, mgmt_url) != 0)
        return -1;
    topo_plan_t p;
    topo_plan_common(cfg, &p);
    int rc = verify_plan(&v, &p);
    for (size_t i = 0; rc == 0 && i < n_workers; i++)
        rc = verify_worker(&v, cfg, worker_ids[i]);
    if (rc == 0 && n_workers == 0 && v.mgmt)
        rc = verify_found_workers(&v, cfg);
    if (rc != 0)
        return -1;
    if (n_workers == 0 && !v.mgmt)
        fprintf(out, "note: worker queues not checked: name them with --worker ID, or give a "
                     "management URL to find them\n");
    if (!v.mgmt)
        fprintf(out, "note: only existence was checked; queue arguments, queue and exchange types "
                     "and bindings need the management API (--mgmt-url or WARREN_MGMT_URL)\n");
    return v.drifts;
}
