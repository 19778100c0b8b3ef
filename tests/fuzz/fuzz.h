/*
 * What the libFuzzer targets share (docs/development.md, "Fuzz targets"): the entry points, a
 * check that aborts so the fuzzer keeps the input that broke an invariant, and the input as a C
 * string.
 */
#ifndef WARREN_FUZZ_H
#define WARREN_FUZZ_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* data[0..size) as a NUL-terminated copy (it may hold NULs of its own); the caller frees it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* An error message a parser wrote: terminated within its buffer and not empty. */
static inline void fuzz_check_err(const char *err, size_t cap)
{
    FUZZ_CHECK(memchr(err, '\0', cap) != NULL);
    FUZZ_CHECK(err[0] != '\0');
}

/*
 * data[0..len) as an encoded AMQP headers table, decoded as rabbitmq-c decodes the properties of
 * a content header (with the flag word for "headers only" put in front). True with the table in
 * *out when it decodes; false with an empty table. The table's strings point into *props, which
 * the caller frees once done with it (also after false), and its arrays into pool.
 */
static inline bool fuzz_headers_table(const uint8_t *data, size_t len, amqp_pool_t *pool,
                                      uint8_t **props, amqp_table_t *out)
{
    uint8_t *p = malloc(len + 2);
    FUZZ_CHECK(p != NULL);
    p[0] = AMQP_BASIC_HEADERS_FLAG >> 8;
    p[1] = AMQP_BASIC_HEADERS_FLAG & 0xFF;
    if (len)
        memcpy(p + 2, data, len);
    *props = p;
    *out = amqp_empty_table;
    void *decoded = NULL;
    if (amqp_decode_properties(AMQP_BASIC_CLASS, pool, (amqp_bytes_t){len + 2, p}, &decoded) !=
        AMQP_STATUS_OK)
        return false;
    const amqp_basic_properties_t *props_decoded = decoded;
    FUZZ_CHECK(props_decoded->_flags & AMQP_BASIC_HEADERS_FLAG);
    *out = props_decoded->headers;
    return true;
}

#endif
