/* MessageClient connection lifecycle: connect with timeouts and capabilities, channel, teardown. */
#include <amqp.h> /* before amqp_framing.h, which needs its types */
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <linux/sockios.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include "mq/mq_internal.h"
#include "warren/evloop.h"
#include "warren/log.h"
#include "warren/utf8.h"
#include "warren/version.h"

#define DEFAULT_TIMEOUT_MS 5000
#define RECONNECT_BASE_MS 100
/* Short enough that a broker that comes back is found within seconds. */
#define RECONNECT_CAP_MS 5000
#define CONNECT_WARN_EVERY_MS 30000
/* Method and header frames, frame envelopes and properties: an upper bound. */
#define PUBLISH_OVERHEAD 4096
/*
 * The largest frame we read, above the negotiated frame_max. RabbitMQ checks frame_max on what it
 * receives, not on what it sends: when it dead-letters a message it adds x-death and the
 * x-first-death and x-last-death headers to the content header frame, so a message published
 * with headers near frame_max comes out of a dead-letter queue over it. rabbitmq-c would then
 * drop the connection (invalid AMQP data) at every delivery of it, for ever, and with it every
 * consumer of the connection. The broker adds a few hundred bytes per hop and queue; four
 * times the negotiated size is far more than any path can add.
 */
#define MQ_INBOUND_FRAME_FACTOR 4

const char *mq_status_name(int status)
{
    switch (status) {
    case MQ_OK: return "ok";
    case MQ_ERR_BREAKER_OPEN: return "breaker_open";
    case MQ_ERR_NACKED: return "nacked";
    case MQ_ERR_RETURNED: return "returned";
    case MQ_ERR_TIMEOUT: return "timeout";
    case MQ_ERR_CONNECTION: return "connection";
    case MQ_ERR_CLOSED_BY_BROKER: return "closed_by_broker";
    case MQ_ERR_CANCELLED: return "cancelled";
    case MQ_ERR_UNCONFIRMED: return "unconfirmed";
    }
    return "unknown";
}

bool mq_status_maybe_delivered(int status)
{
    return status == MQ_OK || status == MQ_ERR_TIMEOUT || status == MQ_ERR_UNCONFIRMED;
}

void mq_options_from_config(mq_options_t *o, const warren_config_t *cfg, const char *app_id)
{
    memset(o, 0, sizeof *o);
    o->url = cfg->rabbitmq.url;
    o->heartbeat_s = cfg->rabbitmq.heartbeat_s;
    o->connect_timeout_ms = cfg->rabbitmq.connect_timeout_ms;
    o->publish_timeout_ms = cfg->rabbitmq.publish_timeout_ms;
    o->prefetch = cfg->rabbitmq.prefetch;
    o->breaker_failure_threshold = cfg->circuit_breaker.messaging.failure_threshold;
    o->breaker_success_threshold = cfg->circuit_breaker.messaging.success_threshold;
    o->breaker_open_timeout_s = cfg->circuit_breaker.messaging.open_timeout_s;
    o->max_body_bytes = (size_t)cfg->message_queue.max_body_bytes;
    o->app_id = app_id;
    o->tls = (mq_tls_t){.ca_file = cfg->rabbitmq.tls.ca_file,
                        .cert_file = cfg->rabbitmq.tls.cert_file,
                        .key_file = cfg->rabbitmq.tls.key_file,
                        .verify_peer = cfg->rabbitmq.tls.verify_peer,
                        .verify_hostname = cfg->rabbitmq.tls.verify_hostname};
}

/* amqp_parse_url() writes into the text it parses: it gets a copy, which the caller frees
 * with free(*copy), also on failure. */
static int parse_url(const char *url, char **copy, struct amqp_connection_info *u)
{
    *copy = strdup(url);
    return *copy && amqp_parse_url(*copy, u) == AMQP_STATUS_OK ? 0 : -1;
}

int mq_url_user(const char *url, char *buf, size_t len)
{
    char *copy;
    struct amqp_connection_info u;
    int rc = parse_url(url ? url : "", &copy, &u);
    if (rc == 0 && (size_t)snprintf(buf, len, "%s", u.user) >= len)
        rc = -1;
    free(copy);
    return rc;
}

int mq_check_options(const mq_options_t *o, char *err, size_t errlen)
{
    char *copy;
    struct amqp_connection_info u;
    int rc = parse_url(o->url ? o->url : "", &copy, &u);
    if (rc != 0)
        snprintf(err, errlen, "cannot parse the RabbitMQ URL (amqp:// or amqps://)");
    else if (u.ssl)
        rc = mq_tls_check(&o->tls, err, errlen);
    free(copy);
    return rc;
}

/* NULL stays NULL; false when a copy could not be made. */
static bool copy_string(const char *s, char **out)
{
    *out = s ? strdup(s) : NULL;
    return !s || *out;
}

static int or_default(int v, int def)
{
    return v > 0 ? v : def;
}

static void set_breaker_limits(mq_client_t *c, const mq_options_t *o)
{
    c->opts.breaker_failure_threshold = or_default(o->breaker_failure_threshold, 5);
    c->opts.breaker_success_threshold = or_default(o->breaker_success_threshold, 2);
    c->opts.breaker_open_timeout_s = or_default(o->breaker_open_timeout_s, 30);
    breaker_set_limits(&c->breaker, c->opts.breaker_failure_threshold,
                       c->opts.breaker_success_threshold,
                       (int64_t)c->opts.breaker_open_timeout_s * 1000);
}

void mq_reconfigure(mq_client_t *c, const warren_config_t *cfg)
{
    mq_options_t o;
    if (!c)
        return;
    mq_options_from_config(&o, cfg, NULL);
    set_breaker_limits(c, &o);
}

mq_client_t *mq_new(const mq_options_t *opts)
{
    mq_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->url = strdup(opts->url ? opts->url : "amqp://guest:guest@127.0.0.1:5672/");
    c->app_id = strdup(opts->app_id ? opts->app_id : "warren");
    if (!c->url || !c->app_id || !copy_string(opts->tls.ca_file, &c->ca_file) ||
        !copy_string(opts->tls.cert_file, &c->cert_file) ||
        !copy_string(opts->tls.key_file, &c->key_file)) {
        mq_destroy(c);
        return NULL;
    }
    c->opts = *opts;
    c->opts.url = c->url;
    c->opts.app_id = c->app_id;
    c->opts.tls.ca_file = c->ca_file;
    c->opts.tls.cert_file = c->cert_file;
    c->opts.tls.key_file = c->key_file;
    c->opts.heartbeat_s = opts->heartbeat_s > 0 ? opts->heartbeat_s : 0;
    c->opts.prefetch = opts->prefetch > 0 ? opts->prefetch : 0;
    c->opts.connect_timeout_ms = or_default(opts->connect_timeout_ms, DEFAULT_TIMEOUT_MS);
    c->opts.publish_timeout_ms = or_default(opts->publish_timeout_ms, DEFAULT_TIMEOUT_MS);
    if (c->opts.max_body_bytes == 0)
        c->opts.max_body_bytes = MQ_DEFAULT_MAX_BODY_BYTES;
    breaker_init(&c->breaker, "messaging", 0, 0, 0);
    set_breaker_limits(c, opts);
    backoff_init(&c->backoff, RECONNECT_BASE_MS, RECONNECT_CAP_MS);
    confirm_init(&c->confirms);
    c->consume_status = MQ_ERR_CONNECTION;
    return c;
}

void mq_destroy(mq_client_t *c)
{
    if (!c)
        return;
    mq_disconnect(c);
    free(c->stash);
    confirm_free(&c->confirms);
    free(c->url);
    free(c->app_id);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    free(c);
}

void mq_set_error(mq_client_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
}

const char *mq_last_error(const mq_client_t *c)
{
    return c->last_error;
}

void mq_describe_reply(amqp_rpc_reply_t r, char *buf, size_t len)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL: snprintf(buf, len, "ok"); return;
    case AMQP_RESPONSE_NONE: snprintf(buf, len, "no reply from the broker"); return;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(buf, len, "%s", amqp_error_string2(r.library_error));
        return;
    case AMQP_RESPONSE_SERVER_EXCEPTION: break;
    }
    if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *m = r.reply.decoded;
        snprintf(buf, len, "connection closed by broker: %u %.*s", m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = r.reply.decoded;
        snprintf(buf, len, "%u %.*s", m->reply_code, (int)m->reply_text.len,
                 (const char *)m->reply_text.bytes);
    } else {
        snprintf(buf, len, "unexpected broker method 0x%08x", r.reply.id);
    }
}

char *mq_header_string(const amqp_table_t *headers, const char *key)
{
    if (!headers)
        return NULL;
    size_t klen = strlen(key);
    for (int i = 0; i < headers->num_entries; i++) {
        const amqp_table_entry_t *e = &headers->entries[i];
        if (e->key.len != klen || memcmp(e->key.bytes, key, klen))
            continue;
        /* RabbitMQ writes strings as long strings ('S'); accept byte arrays ('x') too. */
        if (e->value.kind != AMQP_FIELD_KIND_UTF8 && e->value.kind != AMQP_FIELD_KIND_BYTES)
            return NULL;
        return strndup(e->value.value.bytes.bytes, e->value.value.bytes.len);
    }
    return NULL;
}

const breaker_t *mq_breaker(const mq_client_t *c)
{
    return &c->breaker;
}

int64_t mq_retry_in_ms(const mq_client_t *c)
{
    return breaker_retry_in_ms(&c->breaker, now_mono_ms());
}

bool mq_connected(const mq_client_t *c)
{
    return c->conn && c->channel_open;
}

int mq_fd(const mq_client_t *c)
{
    return c->conn ? amqp_get_sockfd(c->conn) : -1;
}

amqp_connection_state_t mq_conn(mq_client_t *c)
{
    return c->conn;
}

int mq_channel(const mq_client_t *c)
{
    return MQ_CHANNEL;
}

static bool reply_ok(mq_client_t *c, amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return true;
    char why[ERRBUF_SIZE - 64];
    mq_describe_reply(r, why, sizeof why);
    mq_set_error(c, "%s: %s", what, why);
    return false;
}

/* channel.open, confirm.select (tags restart at 1) and basic.qos on MQ_CHANNEL. */
static int open_channel(mq_client_t *c)
{
    amqp_channel_open(c->conn, MQ_CHANNEL);
    if (!reply_ok(c, amqp_get_rpc_reply(c->conn), "channel.open"))
        return -1;
    amqp_confirm_select(c->conn, MQ_CHANNEL);
    if (!reply_ok(c, amqp_get_rpc_reply(c->conn), "confirm.select"))
        return -1;
    if (c->opts.prefetch > 0) {
        uint16_t prefetch = (uint16_t)(c->opts.prefetch > 65535 ? 65535 : c->opts.prefetch);
        amqp_basic_qos(c->conn, MQ_CHANNEL, 0, prefetch, 0);
        if (!reply_ok(c, amqp_get_rpc_reply(c->conn), "basic.qos"))
            return -1;
    }
    confirm_reset(&c->confirms);
    c->channel_open = true;
    c->channel_gen = (c->channel_gen + 1) & MQ_GEN_MASK;
    return 0;
}

static amqp_table_entry_t bool_entry(const char *key, bool v)
{
    amqp_table_entry_t e = {.key = amqp_cstring_bytes(key)};
    e.value.kind = AMQP_FIELD_KIND_BOOLEAN;
    e.value.value.boolean = v;
    return e;
}

static amqp_table_entry_t string_entry(const char *key, const char *v)
{
    amqp_table_entry_t e = {.key = amqp_cstring_bytes(key)};
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = amqp_cstring_bytes(v);
    return e;
}

/* Without these capabilities the broker sends neither basic.cancel (queue deleted) nor
 * connection.blocked (resource alarm); amqp_login() does not advertise them. */
static int login(mq_client_t *c, const struct amqp_connection_info *u)
{
    amqp_table_entry_t caps[] = {
        bool_entry("consumer_cancel_notify", true),
        bool_entry("connection.blocked", true),
    };
    amqp_table_entry_t props[4] = {
        string_entry("product", "warren"),
        string_entry("version", WARREN_VERSION),
        string_entry("connection_name", c->app_id),
        {.key = amqp_cstring_bytes("capabilities")},
    };
    props[3].value.kind = AMQP_FIELD_KIND_TABLE;
    props[3].value.value.table = (amqp_table_t){.num_entries = 2, .entries = caps};
    amqp_table_t table = {.num_entries = 4, .entries = props};
    amqp_rpc_reply_t r = amqp_login_with_properties(c->conn, u->vhost, 0, AMQP_DEFAULT_FRAME_SIZE,
                                                    c->opts.heartbeat_s, &table,
                                                    AMQP_SASL_METHOD_PLAIN, u->user, u->password);
    if (u->ssl && r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_SSL_ERROR) {
        char why[ERRBUF_SIZE - 16];
        mq_tls_describe(r.library_error, u->host, u->port, &c->opts.tls, why, sizeof why);
        mq_set_error(c, "login: %s", why);
        return -1;
    }
    if (!reply_ok(c, r, "login"))
        return -1;
    /* rabbitmq-c has one frame_max for both directions: raise it for what we read, keep the
     * negotiated one for what we send (publish.c splits bodies by it). */
    c->frame_max = amqp_get_frame_max(c->conn);
    int rc = amqp_tune_connection(c->conn, amqp_get_channel_max(c->conn),
                                  c->frame_max * MQ_INBOUND_FRAME_FACTOR,
                                  amqp_get_heartbeat(c->conn));
    if (rc != AMQP_STATUS_OK) {
        mq_set_error(c, "login: setting the frame size: %s", amqp_error_string2(rc));
        return -1;
    }
    return 0;
}

static int open_socket(mq_client_t *c, const struct amqp_connection_info *u)
{
    char why[ERRBUF_SIZE] = "cannot create socket";
    amqp_socket_t *sock = u->ssl ? mq_tls_socket(c->conn, &c->opts.tls, why, sizeof why)
                                 : amqp_tcp_socket_new(c->conn);
    if (!sock) {
        mq_set_error(c, "%s", why);
        return -1;
    }
    /* TCP connect and, for amqps://, the TLS handshake with its certificate checks. */
    struct timeval tv = evloop_tv(c->opts.connect_timeout_ms);
    int rc = amqp_socket_open_noblock(sock, u->host, u->port, &tv);
    if (rc != AMQP_STATUS_OK) {
        if (u->ssl)
            mq_tls_describe(rc, u->host, u->port, &c->opts.tls, why, sizeof why);
        else
            snprintf(why, sizeof why, "connect %s:%d: %s", u->host, u->port,
                     amqp_error_string2(rc));
        mq_set_error(c, "%s", why);
        return -1;
    }
    /* Bound the login handshake and every synchronous RPC (declare, consume, close). */
    amqp_set_handshake_timeout(c->conn, &tv);
    int rpc_ms = c->opts.connect_timeout_ms > c->opts.publish_timeout_ms
                     ? c->opts.connect_timeout_ms
                     : c->opts.publish_timeout_ms;
    struct timeval rpc = evloop_tv(rpc_ms);
    amqp_set_rpc_timeout(c->conn, &rpc);
    return 0;
}

static void drop_connection(mq_client_t *c)
{
    if (c->conn)
        amqp_destroy_connection(c->conn);
    c->conn = NULL;
    c->channel_open = false;
    c->blocked = false;
}

/* A connection without TLS says so; one whose broker identity goes unchecked warns. */
static void log_connected(const mq_client_t *c, const struct amqp_connection_info *u)
{
    bool unverified = u->ssl && !(c->opts.tls.verify_peer && c->opts.tls.verify_hostname);
    const char *tls = unverified ? "unverified" : "verified";
    log_kv(unverified ? LOG_WARN : LOG_INFO, "connected to RabbitMQ", "host", u->host, "vhost",
           u->vhost, "tls", u->ssl ? tls : "off", NULL);
}

static int do_connect(mq_client_t *c)
{
    char *url;
    struct amqp_connection_info u;
    int rc = -1;
    if (parse_url(c->url, &url, &u) != 0) {
        mq_set_error(c, url ? "cannot parse the RabbitMQ URL" : "out of memory");
        free(url);
        return -1;
    }
    c->conn = amqp_new_connection();
    if (!c->conn)
        mq_set_error(c, "out of memory");
    else if (strlen(u.user) > MQ_USER_MAX)
        mq_set_error(c, "the RabbitMQ user name is longer than %d bytes", MQ_USER_MAX);
    else if (open_socket(c, &u) == 0 && login(c, &u) == 0 && open_channel(c) == 0)
        rc = 0;
    if (rc == 0)
        snprintf(c->user, sizeof c->user, "%s", u.user);
    if (rc != 0)
        drop_connection(c);
    else
        log_connected(c, &u);
    free(url);
    return rc;
}

/* Every connect attempt, explicit or automatic, advances the backoff on failure. */
static int connect_attempt(mq_client_t *c)
{
    int64_t now = now_mono_ms();
    if (do_connect(c) == 0) {
        backoff_reset(&c->backoff);
        c->next_connect_ms = now;
        c->last_error[0] = '\0';
        c->next_connect_warn_ms = 0;
        breaker_reconnected(&c->breaker, now_mono_ms()); /* the broker is back: probe now */
        return 0;
    }
    snprintf(c->connect_error, sizeof c->connect_error, "%s", c->last_error);
    int64_t delay = backoff_next(&c->backoff, evloop_random());
    c->next_connect_ms = now + delay;
    char delay_text[24];
    snprintf(delay_text, sizeof delay_text, "%lld", (long long)delay);
    /* Retries come every few seconds while the broker is away: one warning per half minute. */
    bool warn = now >= c->next_connect_warn_ms;
    if (warn)
        c->next_connect_warn_ms = now + CONNECT_WARN_EVERY_MS;
    log_kv(warn ? LOG_WARN : LOG_DEBUG, "RabbitMQ connect failed", "error", c->last_error,
           "backoff_ms", delay_text, NULL);
    return -1;
}

int mq_connect(mq_client_t *c, char *err, size_t errlen)
{
    if (mq_connected(c))
        return 0;
    if (c->conn) /* connection without a channel: start clean */
        drop_connection(c);
    if (connect_attempt(c) == 0)
        return 0;
    snprintf(err, errlen, "%s", c->last_error);
    return -1;
}

/* An RPC made through mq_conn() (topology declares) failed and nobody called
 * mq_reopen_channel(): the channel is closed on the broker's side, or the connection suspect. */
static void recover_after_raw_rpc(mq_client_t *c)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c->conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL || r.reply_type == AMQP_RESPONSE_NONE)
        return;
    char err[ERRBUF_SIZE];
    if (mq_reopen_channel(c, err, sizeof err) == 0)
        log_kv(LOG_INFO, "reopened the channel after a failed RPC", "error", err, NULL);
}

int mq_ensure_connected(mq_client_t *c, bool probe)
{
    if (mq_connected(c))
        recover_after_raw_rpc(c);
    if (mq_connected(c))
        return MQ_OK;
    if (c->conn)
        drop_connection(c);
    if (!probe && now_mono_ms() < c->next_connect_ms) {
        mq_set_error(c, "not connected (reconnect backoff; last connect: %.*s)",
                     utf8_prec(c->connect_error, 400), c->connect_error);
        return MQ_ERR_CONNECTION;
    }
    return connect_attempt(c) == 0 ? MQ_OK : MQ_ERR_CONNECTION;
}

int mq_try_connect(mq_client_t *c)
{
    return mq_ensure_connected(c, false);
}

void mq_consumer_lost(mq_client_t *c, int status)
{
    if (!c->consumer_tag)
        return;
    free(c->consumer_tag);
    c->consumer_tag = NULL;
    c->consume_status = status;
    c->consume_event_unseen = true;
    snprintf(c->consume_error, sizeof c->consume_error, "%s", c->last_error);
}

static void outstanding_lost(mq_client_t *c, int status)
{
    mq_stash_discard(c);
    confirm_reset(&c->confirms);
    if (c->waiting)
        c->waiting->lost_status = status;
}

void mq_connection_lost(mq_client_t *c, const char *why)
{
    mq_set_error(c, "%s", why);
    log_kv(LOG_WARN, "RabbitMQ connection lost", "error", why, NULL);
    drop_connection(c);
    outstanding_lost(c, MQ_ERR_CONNECTION);
    mq_consumer_lost(c, MQ_ERR_CONNECTION);
}

int mq_channel_closed(mq_client_t *c, const char *why)
{
    mq_set_error(c, "%s", why);
    log_kv(LOG_WARN, "channel closed by broker", "error", why, NULL);
    c->channel_open = false;
    outstanding_lost(c, MQ_ERR_CLOSED_BY_BROKER);
    mq_consumer_lost(c, MQ_ERR_CLOSED_BY_BROKER);
    amqp_maybe_release_buffers_on_channel(c->conn, MQ_CHANNEL);
    char close_text[ERRBUF_SIZE];
    snprintf(close_text, sizeof close_text, "%s", c->last_error);
    if (open_channel(c) != 0) {
        char reopen[ERRBUF_SIZE];
        snprintf(reopen, sizeof reopen, "reopening the channel failed: %.*s",
                 utf8_prec(c->last_error, 400), c->last_error);
        mq_connection_lost(c, reopen);
        return MQ_ERR_CONNECTION;
    }
    mq_set_error(c, "%s", close_text); /* callers want the close reason, not "ok" */
    return MQ_OK;
}

int mq_reopen_channel(mq_client_t *c, char *err, size_t errlen)
{
    if (!c->conn) {
        snprintf(err, errlen, "not connected");
        return -1;
    }
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c->conn);
    char why[ERRBUF_SIZE];
    mq_describe_reply(r, why, sizeof why);
    snprintf(err, errlen, "%s", why);
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_connection_close_ok_t ok = {0};
        (void)amqp_send_method(c->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
        mq_connection_lost(c, why);
        return -1;
    }
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_ok_t ok = {0};
        if (amqp_send_method(c->conn, MQ_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) !=
            AMQP_STATUS_OK) {
            mq_connection_lost(c, "sending channel.close-ok failed");
            return -1;
        }
    } else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
        mq_connection_lost(c, why);
        return -1;
    } else if (c->channel_open) {
        return 0; /* the last call did not close the channel: nothing to reopen */
    }
    return mq_channel_closed(c, why) == MQ_OK ? 0 : -1;
}

void mq_disconnect(mq_client_t *c)
{
    if (c->conn) {
        /* Polite close, bounded by the rpc timeout; the outcome does not matter. */
        if (c->channel_open)
            (void)amqp_channel_close(c->conn, MQ_CHANNEL, AMQP_REPLY_SUCCESS);
        (void)amqp_connection_close(c->conn, AMQP_REPLY_SUCCESS);
    }
    drop_connection(c);
    outstanding_lost(c, MQ_ERR_CONNECTION);
    if (c->consumer_tag) {
        mq_set_error(c, "disconnected by mq_disconnect()");
        mq_consumer_lost(c, MQ_ERR_CONNECTION);
    }
}

/* Free space in the socket's send buffer, conservatively: the kernel charges overhead per
 * segment, so count only half of SO_SNDBUF as usable payload. */
static bool send_room(int fd, size_t bytes)
{
    int queued = 0, sndbuf = 0;
    socklen_t len = sizeof sndbuf;
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0)
        return true; /* cannot tell: rely on poll alone */
    if (queued == 0)
        return true; /* an empty buffer takes anything the peer reads */
    return (size_t)queued + bytes <= (size_t)sndbuf / 2;
}

/*
 * rabbitmq-c 0.11 writes with an infinite deadline: a publish into a full send buffer (broker
 * memory alarm, dead peer without RST) would hang the thread. Only write when the kernel can
 * take the whole message now; a connection that cannot drain within the deadline is dropped.
 */
int mq_wait_writable(mq_client_t *c, size_t bytes, int64_t deadline_ms)
{
    int fd = mq_fd(c);
    if (fd < 0)
        return MQ_ERR_CONNECTION;
    bytes += PUBLISH_OVERHEAD;
    for (;;) {
        int n = fiber_wait_fd(fd, POLLOUT, deadline_ms); /* on a fiber the loop runs meanwhile */
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (n > 0 && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0)) {
            mq_connection_lost(c, "socket error while publishing");
            return MQ_ERR_CONNECTION;
        }
        if (n > 0 && send_room(fd, bytes))
            return MQ_OK;
        if (n <= 0 || now_mono_ms() >= deadline_ms) {
            mq_connection_lost(
                c, "publish stalled: the socket did not drain within publish_timeout_ms");
            return MQ_ERR_CONNECTION;
        }
        fiber_sleep_ms(5); /* writable, but not room for the whole message yet */
    }
}
