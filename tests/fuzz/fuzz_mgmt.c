/*
 * What `warren topology verify` reads from the broker's management API: a raw HTTP response
 * (mq/http_get.h), its body as JSON, and that JSON compared with the wanted topology
 * (mq/topology_plan.h) as a queue, an exchange and a list of bindings.
 * Invariants: a refusal says why; an accepted response has a status of 100..599 and a body
 * that is exactly the bytes after the header block, NUL-terminated; and nothing depends on the
 * bytes after the response. (recv_all's buffer is not NUL-terminated, and reads past its end
 * by libc's string functions are invisible to AddressSanitizer: the response is parsed again
 * followed by other bytes, and must give the same answer.)
 */
#include "fuzz.h"
#include "mq/http_get.h"
#include "mq/topology_plan.h"
#include "warren/log.h"

static warren_config_t cfg;
static topo_plan_t common, worker;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[ERRBUF_SIZE];
    log_setup(LOG_ERROR, LOG_FORMAT_TEXT);
    unsetenv("WARREN_CONFIG");
    FUZZ_CHECK(cfg_load(&cfg, NULL, err, sizeof err) == 0);
    topo_plan_common(&cfg, &common);
    FUZZ_CHECK(topo_plan_worker(&cfg, "w1", &worker) == 0);
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(devnull != NULL);
    return 0;
}

/* The body against every object of a plan, as verify_object and verify_bindings use it. */
static void compare(const topo_plan_t *p, json_object *live)
{
    for (size_t i = 0; i < p->n_exchanges; i++)
        FUZZ_CHECK(topo_compare_exchange(&p->exchanges[i], live, p->hint, devnull) >= 0);
    for (size_t i = 0; i < p->n_queues; i++)
        FUZZ_CHECK(topo_compare_queue(&p->queues[i], live, p->hint, devnull) >= 0);
    for (size_t i = 0; i < p->n_bindings; i++)
        FUZZ_CHECK(topo_compare_bindings(p, p->bindings[i].exchange, p->bindings[i].queue, live,
                                         devnull) >= 0);
}

/* The response parsed from a copy that pad[] follows in memory; the answer as text in out. */
static void parse_followed_by(const uint8_t *data, size_t size, const char *pad, char *out,
                              size_t outlen)
{
    size_t padlen = strlen(pad);
    char *buf = malloc(size + padlen + 1), err[ERRBUF_SIZE] = "";
    FUZZ_CHECK(buf != NULL);
    if (size)
        memcpy(buf, data, size);
    memcpy(buf + size, pad, padlen + 1);
    http_response_t r;
    int rc = http_parse_response(buf, size, &r, err, sizeof err);
    snprintf(out, outlen, "rc %d status %d body %zu: %.*s / %s", rc, r.status, r.body_len,
             (int)(r.body ? r.body_len : 0), r.body ? r.body : "", err);
    http_response_free(&r);
    free(buf);
}

static void check_self_contained(const uint8_t *data, size_t size)
{
    static const char *const pads[] = {"", " 200 OK\r\n", "0000000000000000000000", "\r\n\r\n"};
    char first[1024], other[1024];
    parse_followed_by(data, size, pads[0], first, sizeof first);
    for (size_t i = 1; i < sizeof pads / sizeof pads[0]; i++) {
        parse_followed_by(data, size, pads[i], other, sizeof other);
        if (strcmp(first, other) != 0) {
            fprintf(stderr, "the parse read past the response:\n  %s\n  %s\n", first, other);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_response_t r;
    char err[ERRBUF_SIZE];
    check_self_contained(data, size);
    /* data is exactly size bytes, not NUL-terminated, like what recv_all hands over. */
    if (http_parse_response((const char *)data, size, &r, err, sizeof err) != 0) {
        fuzz_check_err(err, sizeof err);
        http_response_free(&r);
        return 0;
    }
    FUZZ_CHECK(r.status >= 100 && r.status <= 599);
    FUZZ_CHECK(r.body != NULL && r.body[r.body_len] == '\0');
    FUZZ_CHECK(r.body_len < size && !memcmp(data + size - r.body_len, r.body, r.body_len));
    json_object *live = json_tokener_parse(r.body); /* as mgmt_get reads it */
    if (live) {
        compare(&common, live);
        compare(&worker, live);
        json_object_put(live);
    }
    http_response_free(&r);
    return 0;
}
