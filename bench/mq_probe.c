/*
 * mq_probe: drives the MessageClient from shell tests. Prints one line per operation so tests
 * can assert on statuses, breaker states and call durations.
 *
 *   mq_probe publish [opts] EXCHANGE:KEY...   N messages to each target, in order, one client
 *   mq_probe consume [opts] -q QUEUE          take N deliveries (ack, or nack with --nack)
 *   mq_probe relay [opts] -q QUEUE EXCHANGE:KEY  take N deliveries, republish each, then ack
 *   mq_probe loop [opts] EXCHANGE:KEY         one publish every --interval ms for --duration s
 *   mq_probe deep [-n DEPTH] EXCHANGE:KEY     one message whose headers nest DEPTH tables (by
 *                                             default as deep as one frame holds), confirmed
 *
 * Options start from the configuration (defaults, $WARREN_CONFIG, WARREN__* variables, mapped by
 * mq_options_from_config); flags override them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mq/mq_internal.h" /* raw channel access, as topology code has */
#include "warren/log.h"
#include "warren/mq.h"

typedef struct probe {
    warren_config_t cfg;
    mq_options_t opts;
    int count, batch, interval_ms, duration_s, timeout_ms;
    bool mandatory, nack;
    const char *queue, *type, *execution_id, *correlation_id, *id_prefix, *passive;
    const char *body, *user_id;
    int64_t expiration_ms;
} probe_t;

static void usage(void)
{
    fprintf(stderr,
            "usage: mq_probe publish|consume|relay|loop|deep [options] [EXCHANGE:KEY...]\n"
            "  -u URL            broker (default: message_queue.rabbitmq.url)\n"
            "  -n N              messages per target / deliveries to take (default 1);\n"
            "                    deep: the nesting depth (default: as deep as a frame holds)\n"
            "  -b N              publish in batches of N (default 1: one mq_publish each)\n"
            "  -m                mandatory\n"
            "  -q QUEUE          queue to consume\n"
            "  -T TYPE -E EXECUTION_ID -C CORRELATION_ID -I ID_PREFIX -x EXPIRATION_MS\n"
            "  -B BODY           publish: this body (default {\"probe\":true})\n"
            "  -U USER           publish: claim this user_id instead of the login user's\n"
            "  -t MS             consume: wait per delivery (default 5000)\n"
            "  -P QUEUE          publish: first a passive queue.declare through mq_conn(), as\n"
            "                    topology code does, without mq_reopen_channel() afterwards\n"
            "  --nack            consume: nack (requeue=false) instead of ack\n"
            "  -i MS -d S        loop: interval (default 200) and duration (default 10)\n"
            "  -f N -s N -o S    breaker failure/success thresholds, open timeout\n"
            "  -c MS -p MS -H S  connect timeout, publish timeout, heartbeat\n");
}

static int parse(int argc, char **argv, probe_t *p)
{
    static const struct option longopts[] = {{"nack", no_argument, NULL, 'N'}, {NULL, 0, NULL, 0}};
    char err[ERRBUF_SIZE];
    memset(p, 0, sizeof *p);
    if (cfg_load(&p->cfg, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "mq_probe: %s\n", err);
        return -1;
    }
    mq_options_from_config(&p->opts, &p->cfg, "mq_probe");
    p->count = p->batch = 1;
    p->interval_ms = 200;
    p->duration_s = 10;
    p->timeout_ms = 5000;
    int ch;
    while ((ch = getopt_long(argc, argv, "u:n:b:mq:T:E:C:I:x:t:P:i:d:f:s:o:c:p:H:B:U:", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'u': p->opts.url = optarg; break;
        case 'n': p->count = atoi(optarg); break;
        case 'b': p->batch = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        case 'm': p->mandatory = true; break;
        case 'q': p->queue = optarg; break;
        case 'T': p->type = optarg; break;
        case 'E': p->execution_id = optarg; break;
        case 'C': p->correlation_id = optarg; break;
        case 'I': p->id_prefix = optarg; break;
        case 'x': p->expiration_ms = atoll(optarg); break;
        case 't': p->timeout_ms = atoi(optarg); break;
        case 'P': p->passive = optarg; break;
        case 'N': p->nack = true; break;
        case 'B': p->body = optarg; break;
        case 'U': p->user_id = optarg; break;
        case 'i': p->interval_ms = atoi(optarg); break;
        case 'd': p->duration_s = atoi(optarg); break;
        case 'f': p->opts.breaker_failure_threshold = atoi(optarg); break;
        case 's': p->opts.breaker_success_threshold = atoi(optarg); break;
        case 'o': p->opts.breaker_open_timeout_s = atoi(optarg); break;
        case 'c': p->opts.connect_timeout_ms = atoi(optarg); break;
        case 'p': p->opts.publish_timeout_ms = atoi(optarg); break;
        case 'H': p->opts.heartbeat_s = atoi(optarg); break;
        default: return -1;
        }
    }
    return p->opts.url ? 0 : -1;
}

/* "exchange:key" -> m; returns -1 without a colon. */
static int target(char *spec, mq_message_t *m)
{
    char *colon = strchr(spec, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    m->exchange = spec;
    m->routing_key = colon + 1;
    return 0;
}

static void fill_message(const probe_t *p, mq_message_t *m, char *id, size_t idlen, int seq)
{
    static const char body[] = "{\"probe\":true}";
    m->body = p->body ? p->body : body;
    m->body_len = p->body ? strlen(p->body) : sizeof body - 1;
    m->mandatory = p->mandatory;
    m->type = p->type;
    m->execution_id = p->execution_id;
    m->correlation_id = p->correlation_id;
    m->expiration_ms = p->expiration_ms;
    m->message_id = NULL;
    if (p->id_prefix) {
        snprintf(id, idlen, "%s%d", p->id_prefix, seq);
        m->message_id = id;
    }
}

static int publish_target(mq_client_t *c, const probe_t *p, mq_message_t proto, int *seq)
{
    int failures = 0;
    mq_message_t *msgs = calloc((size_t)p->batch, sizeof *msgs);
    char(*ids)[64] = calloc((size_t)p->batch, sizeof *ids);
    int *results = calloc((size_t)p->batch, sizeof *results);
    for (int done = 0; done < p->count;) {
        int n = p->count - done < p->batch ? p->count - done : p->batch;
        for (int i = 0; i < n; i++) {
            msgs[i] = proto;
            fill_message(p, &msgs[i], ids[i], sizeof ids[i], *seq + i);
        }
        int rc = mq_publish_batch(c, msgs, (size_t)n, results);
        for (int i = 0; i < n; i++) {
            printf("publish %d exchange=%s key=%s status=%s rc=%d\n", *seq + i, proto.exchange,
                   proto.routing_key, mq_status_name(results[i]), results[i]);
            failures += results[i] != MQ_OK;
        }
        if (rc != MQ_OK)
            printf("error %s\n", mq_last_error(c));
        done += n;
        *seq += n;
    }
    free(msgs);
    free(ids);
    free(results);
    return failures;
}

/* A raw RPC on the client's channel; a 404 closes the channel and is left for the client. */
static int passive_declare(mq_client_t *c, const char *queue)
{
    char err[ERRBUF_SIZE];
    if (mq_connect(c, err, sizeof err) != 0) {
        printf("declare status=connection error=%s\n", err);
        return -1;
    }
    amqp_queue_declare(mq_conn(c), (amqp_channel_t)mq_channel(c), amqp_cstring_bytes(queue), 1, 0,
                       0, 0, amqp_empty_table);
    mq_describe_reply(amqp_get_rpc_reply(mq_conn(c)), err, sizeof err);
    printf("declare passive queue=%s reply=%s\n", queue, err);
    return 0;
}

static int run_publish(mq_client_t *c, const probe_t *p, int argc, char **argv)
{
    int failures = 0, seq = 0;
    if (p->passive && passive_declare(c, p->passive) != 0)
        return EXIT_RUNTIME;
    char err[ERRBUF_SIZE];
    if (p->user_id) { /* what a thief of another worker's reports would try */
        if (mq_connect(c, err, sizeof err) != 0) {
            printf("connect status=connection error=%s\n", err);
            return EXIT_RUNTIME;
        }
        snprintf(c->user, sizeof c->user, "%s", p->user_id);
    }
    for (int i = 0; i < argc; i++) {
        mq_message_t proto = {0};
        if (target(argv[i], &proto) != 0) {
            usage();
            return EXIT_USAGE;
        }
        failures += publish_target(c, p, proto, &seq);
    }
    printf("summary published=%d failed=%d\n", seq - failures, failures);
    return failures ? EXIT_RUNTIME : EXIT_OK;
}

/*
 * deep: what a hostile publisher can send to any queue it may write to. Each level is a table
 * entry "a" holding the next table: 7 bytes (key length, key, kind, table length), so one content
 * header frame of frame_max bytes holds about frame_max / 7 levels. The publish is raw (the
 * MessageClient has no way to send such headers) and fenced by a basic.qos round trip, which the
 * broker answers only after it has routed the message.
 */
static int run_deep(mq_client_t *c, const probe_t *p, char *spec)
{
    mq_message_t to = {0};
    char err[ERRBUF_SIZE];
    if (target(spec, &to) != 0) {
        usage();
        return EXIT_USAGE;
    }
    if (mq_connect(c, err, sizeof err) != 0) {
        printf("connect status=connection error=%s\n", err);
        return EXIT_RUNTIME;
    }
    amqp_connection_state_t conn = mq_conn(c);
    int frame = c->frame_max; /* negotiated: the broker refuses larger frames */
    int depth = p->count > 1 ? p->count : (frame - 64) / 7;
    amqp_table_entry_t *chain = calloc((size_t)depth, sizeof *chain);
    if (!chain)
        return EXIT_RUNTIME;
    for (int i = 0; i < depth; i++) {
        chain[i].key = amqp_cstring_bytes("a");
        chain[i].value.kind = AMQP_FIELD_KIND_TABLE;
        chain[i].value.value.table.num_entries = i + 1 < depth ? 1 : 0;
        chain[i].value.value.table.entries = i + 1 < depth ? &chain[i + 1] : NULL;
    }
    amqp_basic_properties_t props = {0};
    props._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
    props.headers = (amqp_table_t){.num_entries = 1, .entries = chain};
    props.message_id = amqp_cstring_bytes(p->id_prefix ? p->id_prefix : "deep-headers");
    static const char body[] = "{\"probe\":\"deep\"}";
    amqp_channel_t ch = (amqp_channel_t)mq_channel(c);
    int rc = amqp_basic_publish(conn, ch, amqp_cstring_bytes(to.exchange),
                                amqp_cstring_bytes(to.routing_key), 0, 0, &props,
                                (amqp_bytes_t){.len = sizeof body - 1, .bytes = (void *)body});
    free(chain);
    if (rc != AMQP_STATUS_OK) {
        printf("deep depth=%d frame_max=%d status=error error=%s\n", depth, frame,
               amqp_error_string2(rc));
        return EXIT_RUNTIME;
    }
    amqp_basic_qos(conn, ch, 0, 1, 0);
    mq_describe_reply(amqp_get_rpc_reply(conn), err, sizeof err);
    printf("deep depth=%d frame_max=%d status=%s\n", depth, frame, err);
    return strcmp(err, "ok") == 0 ? EXIT_OK : EXIT_RUNTIME;
}

static void print_delivery(int i, const mq_delivery_t *d)
{
    char *exec_id = mq_header_string(&d->headers, "execution_id");
    printf(
        "delivery %d message_id=%s type=%s execution_id=%s content_type=%s redelivered=%d body=%.*s\n",
        i, d->message_id ? d->message_id : "", d->type ? d->type : "", exec_id ? exec_id : "",
        d->content_type ? d->content_type : "", d->redelivered, (int)d->body_len,
        (const char *)d->body);
    free(exec_id);
}

/* relay: republish the delivery to `to` on the same client (what a worker does with results). */
static void relay(mq_client_t *c, const mq_delivery_t *d, const mq_message_t *to, int i)
{
    char id[160];
    snprintf(id, sizeof id, "%s-relayed", d->message_id ? d->message_id : "");
    mq_message_t m = *to;
    m.body = d->body;
    m.body_len = d->body_len;
    m.message_id = id;
    int rc = mq_publish(c, &m);
    printf("relay %d exchange=%s key=%s status=%s rc=%d\n", i, m.exchange, m.routing_key,
           mq_status_name(rc), rc);
}

/* Take p->count deliveries; settle each (after relaying it when `to` is given). A lost consumer
 * is resubscribed, as callers of mq_consume_next() are expected to; a refused resubscribe ends. */
static int run_consume(mq_client_t *c, const probe_t *p, const mq_message_t *to)
{
    char err[ERRBUF_SIZE];
    int rc = mq_consume(c, p->queue, err, sizeof err);
    if (rc != MQ_OK) {
        printf("consume status=%s error=%s\n", mq_status_name(rc), err);
        return EXIT_RUNTIME;
    }
    int got = 0;
    while (got < p->count) {
        mq_delivery_t *d;
        rc = mq_consume_next(c, p->timeout_ms, &d);
        if (rc <= 0) {
            printf("consume status=%s error=%s\n", rc == 0 ? "timeout" : mq_status_name(rc),
                   mq_last_error(c));
            if (rc == 0)
                break;
            rc = mq_consume(c, p->queue, err, sizeof err);
            printf("resubscribe status=%s error=%s\n", mq_status_name(rc), rc == MQ_OK ? "" : err);
            if (rc != MQ_OK)
                break;
            continue;
        }
        print_delivery(got, d);
        if (to)
            relay(c, d, to, got);
        got++;
        rc = p->nack ? mq_nack(c, d->delivery_tag, false) : mq_ack(c, d->delivery_tag, false);
        if (rc != MQ_OK)
            printf("settle status=%s error=%s\n", mq_status_name(rc), mq_last_error(c));
        mq_free_delivery(c, d);
    }
    printf("summary received=%d\n", got);
    return got == p->count ? EXIT_OK : EXIT_RUNTIME;
}

static void sleep_pumping(mq_client_t *c, int64_t until_ms)
{
    while (now_mono_ms() < until_ms) {
        /* Keeps heartbeats and late frames serviced; a lost connection is the next publish's problem. */
        if (mq_connected(c) && mq_pump(c) < 0)
            printf("pump lost the connection: %s\n", mq_last_error(c));
        int64_t left = until_ms - now_mono_ms();
        struct timespec ts = {.tv_nsec = (left > 20 ? 20 : (left > 0 ? left : 0)) * 1000000};
        nanosleep(&ts, NULL);
    }
}

static int run_loop(mq_client_t *c, const probe_t *p, char *spec)
{
    mq_message_t m = {0};
    char id[64];
    if (!spec || target(spec, &m) != 0) {
        usage();
        return EXIT_USAGE;
    }
    int64_t start = now_mono_ms(), end = start + (int64_t)p->duration_s * 1000;
    for (int seq = 0; now_mono_ms() < end; seq++) {
        int64_t t0 = now_mono_ms();
        fill_message(p, &m, id, sizeof id, seq);
        int rc = mq_publish(c, &m);
        int64_t t1 = now_mono_ms();
        printf("loop %d t_ms=%lld status=%s breaker=%s elapsed_ms=%lld%s%s\n", seq,
               (long long)(t0 - start), mq_status_name(rc),
               breaker_state_name(mq_breaker(c)->state), (long long)(t1 - t0),
               rc == MQ_OK ? "" : " error=", rc == MQ_OK ? "" : mq_last_error(c));
        fflush(stdout);
        sleep_pumping(c, t0 + p->interval_ms);
    }
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    probe_t p = {0};
    if (argc < 2 || parse(argc - 1, argv + 1, &p) != 0) {
        usage();
        cfg_free(&p.cfg);
        return EXIT_USAGE;
    }
    log_setup(LOG_INFO, LOG_FORMAT_TEXT);
    log_set_component("mq_probe");
    setvbuf(stdout, NULL, _IOLBF, 0);
    mq_client_t *c = mq_new(&p.opts); /* copies what it keeps: cfg can go */
    cfg_free(&p.cfg);
    if (!c)
        return EXIT_RUNTIME;
    int rest = argc - 1 - optind, rc;
    mq_message_t to = {0};
    char **args = argv + 1 + optind;
    if (!strcmp(argv[1], "publish"))
        rc = run_publish(c, &p, rest, args);
    else if (!strcmp(argv[1], "consume") && p.queue)
        rc = run_consume(c, &p, NULL);
    else if (!strcmp(argv[1], "relay") && p.queue && rest > 0 && target(args[0], &to) == 0)
        rc = run_consume(c, &p, &to);
    else if (!strcmp(argv[1], "deep") && rest > 0)
        rc = run_deep(c, &p, args[0]);
    else if (!strcmp(argv[1], "loop"))
        rc = run_loop(c, &p, rest > 0 ? args[0] : NULL);
    else {
        usage();
        rc = EXIT_USAGE;
    }
    mq_destroy(c);
    return rc;
}
