/*
 * The broker's ceilings on this machine, with rabbitmq-c alone. Every message is persistent, sent
 * to a fresh durable classic queue with publisher confirms, consumed and acked one by one.
 *
 *   serial      publish N (windows of W, each waited for), then consume N: the round trip
 *   concurrent  one process publishes N (a sliding window of W unconfirmed) while another
 *               consumes and acks them: the one-hop ceiling bench/run compares warren with
 *   latency     one process publishes RATE messages a second for D seconds (each confirmed
 *               before the next) while another consumes: publish -> delivery percentiles
 *
 * Prints one line of key=value for people and for bench/run.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include "warren/common.h"

typedef enum { MODE_SERIAL, MODE_CONCURRENT, MODE_LATENCY } bench_mode_t;

typedef struct bench_opts {
    bench_mode_t mode;
    const char *url;
    int n;
    int window;
    int size;
    int prefetch;
    double rate; /* latency: messages per second */
    double secs; /* latency: for how long */
} bench_opts_t;

/* Unconfirmed publishes on one channel: tags 1..n, resolved by acks and nacks (also multiple). */
typedef struct confirms {
    bool *done;
    uint64_t n;
    uint64_t low; /* lowest tag not resolved yet */
    uint64_t resolved;
    uint64_t nacked;
} confirms_t;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_broker: %s: %s\n", what, detail);
    exit(1);
}

static void check_rpc(amqp_connection_state_t c, const char *what)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
        die(what, amqp_error_string2(r.library_error));
    die(what, "the broker refused (see its log)");
}

static amqp_connection_state_t bench_connect(const char *url)
{
    char *copy = strdup(url);
    struct amqp_connection_info ci;
    if (!copy || amqp_parse_url(copy, &ci) != AMQP_STATUS_OK)
        die("bad AMQP URL", url);
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (!s || amqp_socket_open(s, ci.host, ci.port) != AMQP_STATUS_OK)
        die("cannot connect", url);
    amqp_rpc_reply_t r = amqp_login(c, ci.vhost, 1, 131072, 0, AMQP_SASL_METHOD_PLAIN, ci.user,
                                    ci.password);
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
        die("login failed", url);
    free(copy);
    amqp_channel_open(c, 1);
    check_rpc(c, "channel.open");
    return c;
}

static void bench_close(amqp_connection_state_t c)
{
    amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

/* CLOCK_MONOTONIC is one clock for every process of the machine: the publisher's send times and
 * the consumer's receive times compare directly. */
static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sleep_until_ns(int64_t when)
{
    struct timespec t = {(time_t)(when / 1000000000), (long)(when % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
    }
}

/* ---- publishing ---- */

static void confirms_init(confirms_t *k, int n)
{
    k->done = calloc((size_t)n + 1, sizeof *k->done);
    if (!k->done)
        die("confirms", "out of memory");
    k->n = (uint64_t)n;
    k->low = 1;
    k->resolved = k->nacked = 0;
}

static void confirms_mark(confirms_t *k, uint64_t tag, bool multiple, bool nack)
{
    for (uint64_t t = multiple ? k->low : tag; t <= tag && t <= k->n; t++)
        if (!k->done[t]) {
            k->done[t] = true;
            k->resolved++;
            k->nacked += nack;
        }
    while (k->low <= k->n && k->done[k->low])
        k->low++;
}

/* Read one frame (blocking) and apply it if it is a confirm. */
static void confirms_read(amqp_connection_state_t c, confirms_t *k)
{
    amqp_frame_t f;
    if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK)
        die("waiting for confirms", "connection lost");
    if (f.frame_type != AMQP_FRAME_METHOD)
        return;
    if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
        amqp_basic_ack_t *a = f.payload.method.decoded;
        confirms_mark(k, a->delivery_tag, a->multiple, false);
    } else if (f.payload.method.id == AMQP_BASIC_NACK_METHOD) {
        amqp_basic_nack_t *a = f.payload.method.decoded;
        confirms_mark(k, a->delivery_tag, a->multiple, true);
    } else {
        die("waiting for confirms", "unexpected method (channel closed?)");
    }
}

static void publish_one(amqp_connection_state_t c, amqp_bytes_t q, char *body, int size)
{
    static const amqp_basic_properties_t props = {
        ._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG,
        .delivery_mode = AMQP_DELIVERY_PERSISTENT,
        .content_type = {16, "application/json"},
    };
    /* The send time travels in the body, for the consumer's latency. */
    char stamp[24];
    snprintf(stamp, sizeof stamp, "%020lld", (long long)now_ns());
    memcpy(body, stamp, size < 20 ? (size_t)size : 20);
    if (amqp_basic_publish(c, 1, amqp_empty_bytes, q, 0, 0, &props,
                           (amqp_bytes_t){(size_t)size, body}) != AMQP_STATUS_OK)
        die("publish", "failed to write");
}

/*
 * Publish o->n messages. serial: windows of o->window, each confirmed before the next window;
 * concurrent: a sliding window of o->window unconfirmed; latency: one every 1/rate s, each
 * confirmed before the next. Returns the seconds it took.
 */
static double publish_all(amqp_connection_state_t c, amqp_bytes_t q, const bench_opts_t *o)
{
    char *body = malloc((size_t)o->size);
    if (!body)
        die("publish", "out of memory");
    memset(body, 'x', (size_t)o->size);
    amqp_confirm_select(c, 1);
    check_rpc(c, "confirm.select");
    confirms_t k;
    confirms_init(&k, o->n);
    int64_t t0 = now_ns(), interval = o->mode == MODE_LATENCY ? (int64_t)(1e9 / o->rate) : 0;
    for (uint64_t sent = 0; sent < k.n;) {
        if (o->mode == MODE_LATENCY)
            sleep_until_ns(t0 + (int64_t)sent * interval);
        publish_one(c, q, body, o->size);
        sent++;
        uint64_t may_wait; /* unconfirmed publishes allowed before the next one */
        if (o->mode == MODE_SERIAL)
            may_wait = sent % (uint64_t)o->window == 0 ? 0 : (uint64_t)o->window;
        else if (o->mode == MODE_LATENCY)
            may_wait = 0;
        else
            may_wait = (uint64_t)o->window - 1;
        while (sent - k.resolved > may_wait)
            confirms_read(c, &k);
    }
    while (k.resolved < k.n)
        confirms_read(c, &k);
    double secs = (double)(now_ns() - t0) / 1e9;
    free(body);
    free(k.done);
    if (k.nacked)
        die("publish", "the broker nacked messages");
    return secs;
}

/* ---- consuming ---- */

static void consume_start(amqp_connection_state_t c, amqp_bytes_t q, int prefetch)
{
    amqp_basic_qos(c, 1, 0, (uint16_t)prefetch, 0);
    check_rpc(c, "basic.qos");
    amqp_basic_consume(c, 1, q, amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    check_rpc(c, "basic.consume");
}

/* Take n deliveries, ack each; lat_ms (if not NULL) gets each one's publish -> delivery time,
 * first_sent (if not NULL) the first one's send time. Returns the monotonic time of the last ack. */
static int64_t consume_n(amqp_connection_state_t c, int n, double *lat_ms, int64_t *first_sent)
{
    for (int got = 0; got < n; got++) {
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, NULL, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL)
            die("consume", "no delivery");
        int64_t at = now_ns();
        char stamp[24] = {0};
        memcpy(stamp, env.message.body.bytes,
               env.message.body.len < 20 ? env.message.body.len : 20);
        int64_t sent = atoll(stamp);
        if (lat_ms)
            lat_ms[got] = (double)(at - sent) / 1e6;
        if (first_sent && got == 0)
            *first_sent = sent;
        if (amqp_basic_ack(c, 1, env.delivery_tag, 0) != AMQP_STATUS_OK)
            die("ack", "failed to write");
        amqp_destroy_envelope(&env);
    }
    return now_ns();
}

/* ---- modes ---- */

static void run_serial(amqp_connection_state_t c, amqp_bytes_t q, const bench_opts_t *o)
{
    double pub = publish_all(c, q, o);
    int64_t t0 = now_ns();
    consume_start(c, q, o->prefetch);
    double con = (double)(consume_n(c, o->n, NULL, NULL) - t0) / 1e9;
    printf("broker n=%d window=%d bytes=%d prefetch=%d publish_s=%.3f consume_s=%.3f "
           "publish_per_s=%.0f consume_per_s=%.0f roundtrip_per_s=%.0f\n",
           o->n, o->window, o->size, o->prefetch, pub, con, o->n / pub, o->n / con,
           o->n / (pub + con));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static double pct(const double *v, int n, int p)
{
    int i = (int)((p * n + 99) / 100) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* The publisher is a child process with its own connection; the consumer (this process) was
 * subscribed before it starts, so every message is delivered as soon as the broker has it. */
static void run_forked(amqp_connection_state_t c, amqp_bytes_t q, const bench_opts_t *o)
{
    consume_start(c, q, o->prefetch);
    int fds[2];
    if (pipe(fds) != 0)
        die("pipe", "failed");
    pid_t pid = fork();
    if (pid < 0)
        die("fork", "failed");
    if (pid == 0) {
        close(fds[0]);
        amqp_connection_state_t pc = bench_connect(o->url);
        double secs = publish_all(pc, q, o);
        bench_close(pc);
        if (write(fds[1], &secs, sizeof secs) != (ssize_t)sizeof secs)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    double *lat = o->mode == MODE_LATENCY ? calloc((size_t)o->n, sizeof *lat) : NULL;
    if (o->mode == MODE_LATENCY && !lat)
        die("latency", "out of memory");
    int64_t first_sent = 0;
    double total = (double)(consume_n(c, o->n, lat, &first_sent) - first_sent) / 1e9, pub = 0;
    int status;
    if (read(fds[0], &pub, sizeof pub) != (ssize_t)sizeof pub || waitpid(pid, &status, 0) != pid ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("publisher", "failed");
    close(fds[0]);
    if (o->mode == MODE_CONCURRENT) {
        printf("onehop n=%d window=%d bytes=%d prefetch=%d publish_s=%.3f total_s=%.3f "
               "per_s=%.0f\n",
               o->n, o->window, o->size, o->prefetch, pub, total, o->n / total);
        return;
    }
    qsort(lat, (size_t)o->n, sizeof *lat, cmp_double);
    printf("onehop_latency n=%d rate=%g bytes=%d p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f "
           "max_ms=%.2f\n",
           o->n, o->rate, o->size, pct(lat, o->n, 50), pct(lat, o->n, 90), pct(lat, o->n, 99),
           lat[o->n - 1]);
    free(lat);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: bench_broker [-m serial|concurrent|latency] [-u AMQP_URL] [-n MESSAGES]\n"
                 "                    [-w WINDOW] [-s BYTES] [-p PREFETCH] [-r RATE -d SECONDS]\n"
                 "AMQP_URL defaults to $WARREN__MESSAGE_QUEUE__RABBITMQ__URL; latency sends\n"
                 "RATE messages a second for SECONDS (-n is ignored).\n");
}

static void parse(int argc, char **argv, bench_opts_t *o)
{
    int ch;
    while ((ch = getopt(argc, argv, "m:u:n:w:s:p:r:d:h")) != -1) {
        switch (ch) {
        case 'm':
            if (strcmp(optarg, "serial") == 0)
                o->mode = MODE_SERIAL;
            else if (strcmp(optarg, "concurrent") == 0)
                o->mode = MODE_CONCURRENT;
            else if (strcmp(optarg, "latency") == 0)
                o->mode = MODE_LATENCY;
            else
                o->mode = -1;
            break;
        case 'u': o->url = optarg; break;
        case 'n': o->n = atoi(optarg); break;
        case 'w': o->window = atoi(optarg); break;
        case 's': o->size = atoi(optarg); break;
        case 'p': o->prefetch = atoi(optarg); break;
        case 'r': o->rate = atof(optarg); break;
        case 'd': o->secs = atof(optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (o->mode == MODE_LATENCY)
        o->n = (int)(o->rate * o->secs);
    if ((int)o->mode < 0 || !o->url || o->n < 1 || o->window < 1 || o->size < 20 ||
        o->prefetch < 1 || o->prefetch > 65535) {
        usage(stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o = {
        MODE_SERIAL, getenv("WARREN__MESSAGE_QUEUE__RABBITMQ__URL"), 20000, 100, 400, 200, 50, 20};
    parse(argc, argv, &o);
    amqp_connection_state_t c = bench_connect(o.url);
    char name[64];
    snprintf(name, sizeof name, "bench.ceiling.%ld.%ld", (long)getpid(), (long)time(NULL));
    amqp_bytes_t q = amqp_cstring_bytes(name);
    amqp_queue_declare(c, 1, q, 0, 1, 0, 0, amqp_empty_table); /* durable classic, fresh */
    check_rpc(c, "queue.declare");

    if (o.mode == MODE_SERIAL)
        run_serial(c, q, &o);
    else
        run_forked(c, q, &o);

    amqp_queue_delete(c, 1, q, 0, 0);
    check_rpc(c, "queue.delete");
    bench_close(c);
    return 0;
}
