/*
 * The broker's ceiling on this machine, with rabbitmq-c alone: N persistent messages published
 * to a fresh durable queue with publisher confirms (a window of W in flight, then wait for their
 * confirms), then consumed with one ack per message. Prints publish, consume and round-trip
 * rates; bench/run compares warren's throughput against the round trip.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include "warren/common.h"

typedef struct bench_opts {
    const char *url;
    int n;
    int window;
    int size;
    int prefetch;
} bench_opts_t;

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

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Mark tag (and with multiple every earlier tag) of the window [first, first + n) resolved. */
static int resolve(bool *done, uint64_t first, int n, uint64_t tag, bool multiple)
{
    int newly = 0;
    for (uint64_t t = multiple ? first : tag; t <= tag && t < first + (uint64_t)n; t++)
        if (t >= first && !done[t - first]) {
            done[t - first] = true;
            newly++;
        }
    return newly;
}

/* Read frames until tags [first, first + n) are all confirmed; returns how many were nacked. */
static int await_confirms(amqp_connection_state_t c, uint64_t first, int n)
{
    bool *done = calloc(n > 0 ? (size_t)n : 1, sizeof *done);
    if (!done)
        die("waiting for confirms", "out of memory");
    int resolved = 0, nacked = 0;
    while (resolved < n) {
        amqp_frame_t f;
        if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK)
            die("waiting for confirms", "connection lost");
        if (f.frame_type != AMQP_FRAME_METHOD)
            continue;
        if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
            amqp_basic_ack_t *a = f.payload.method.decoded;
            resolved += resolve(done, first, n, a->delivery_tag, a->multiple);
        } else if (f.payload.method.id == AMQP_BASIC_NACK_METHOD) {
            amqp_basic_nack_t *k = f.payload.method.decoded;
            int newly = resolve(done, first, n, k->delivery_tag, k->multiple);
            resolved += newly;
            nacked += newly;
        } else {
            die("waiting for confirms", "unexpected method (channel closed?)");
        }
    }
    free(done);
    return nacked;
}

static double bench_publish(amqp_connection_state_t c, amqp_bytes_t q, const bench_opts_t *o)
{
    char *body = malloc((size_t)o->size);
    memset(body, 'x', (size_t)o->size);
    amqp_basic_properties_t props = {
        ._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG,
        .delivery_mode = AMQP_DELIVERY_PERSISTENT,
        .content_type = amqp_cstring_bytes("application/json"),
    };
    amqp_confirm_select(c, 1);
    check_rpc(c, "confirm.select");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int nacked = 0;
    for (int sent = 0; sent < o->n;) {
        int batch = o->n - sent < o->window ? o->n - sent : o->window;
        for (int i = 0; i < batch; i++)
            if (amqp_basic_publish(c, 1, amqp_empty_bytes, q, 0, 0, &props,
                                   (amqp_bytes_t){(size_t)o->size, body}) != AMQP_STATUS_OK)
                die("publish", "failed to write");
        nacked += await_confirms(c, (uint64_t)sent + 1, batch);
        sent += batch;
    }
    double secs = seconds_since(&t0);
    free(body);
    if (nacked)
        die("publish", "the broker nacked messages");
    return secs;
}

static double bench_consume(amqp_connection_state_t c, amqp_bytes_t q, const bench_opts_t *o)
{
    amqp_basic_qos(c, 1, 0, (uint16_t)o->prefetch, 0);
    check_rpc(c, "basic.qos");
    amqp_basic_consume(c, 1, q, amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    check_rpc(c, "basic.consume");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int got = 0; got < o->n; got++) {
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, NULL, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL)
            die("consume", "no delivery");
        if (amqp_basic_ack(c, 1, env.delivery_tag, 0) != AMQP_STATUS_OK)
            die("ack", "failed to write");
        amqp_destroy_envelope(&env);
    }
    return seconds_since(&t0);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: bench_broker [-u AMQP_URL] [-n MESSAGES] [-w WINDOW] [-s BYTES]\n"
                 "                    [-p PREFETCH]\n"
                 "AMQP_URL defaults to $WARREN__MESSAGE_QUEUE__RABBITMQ__URL.\n");
}

static void parse(int argc, char **argv, bench_opts_t *o)
{
    int ch;
    while ((ch = getopt(argc, argv, "u:n:w:s:p:h")) != -1) {
        switch (ch) {
        case 'u': o->url = optarg; break;
        case 'n': o->n = atoi(optarg); break;
        case 'w': o->window = atoi(optarg); break;
        case 's': o->size = atoi(optarg); break;
        case 'p': o->prefetch = atoi(optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (!o->url || o->n < 1 || o->window < 1 || o->size < 1 || o->prefetch < 1 ||
        o->prefetch > 65535) {
        usage(stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o = {getenv("WARREN__MESSAGE_QUEUE__RABBITMQ__URL"), 20000, 100, 400, 200};
    parse(argc, argv, &o);
    amqp_connection_state_t c = bench_connect(o.url);
    char name[64];
    snprintf(name, sizeof name, "bench.ceiling.%ld.%ld", (long)getpid(), (long)time(NULL));
    amqp_bytes_t q = amqp_cstring_bytes(name);
    amqp_queue_declare(c, 1, q, 0, 1, 0, 0, amqp_empty_table); /* durable classic, fresh */
    check_rpc(c, "queue.declare");

    double pub = bench_publish(c, q, &o);
    double con = bench_consume(c, q, &o);

    amqp_queue_delete(c, 1, q, 0, 0);
    check_rpc(c, "queue.delete");
    amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);

    /* One line of key=value, for people and for bench/run. */
    printf("broker n=%d window=%d bytes=%d prefetch=%d publish_s=%.3f consume_s=%.3f "
           "publish_per_s=%.0f consume_per_s=%.0f roundtrip_per_s=%.0f\n",
           o.n, o.window, o.size, o.prefetch, pub, con, o.n / pub, o.n / con, o.n / (pub + con));
    return 0;
}
