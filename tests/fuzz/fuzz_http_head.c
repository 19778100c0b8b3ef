/*
 * The strict reader of HTTP request heads (http_head_parse, warren/http.h): the bytes a client
 * sends before evhttp sees them. Input: the head as sent, CRLF CRLF appended when it lacks one.
 * Invariants: a refusal has a status of 400, 417, 501 or 505, a static error word and a
 * non-empty detail; an accepted head has one request line of a known method, an origin-form
 * target of allowed characters whose path decodes to no control character, at most one
 * Content-Length (digits only, equal to the number read), no Transfer-Encoding, a Host when it
 * is HTTP/1.1, every line ending with CRLF, no NUL; and the same head read twice reads the same.
 */
#include <strings.h>
#include "fuzz.h"
#include "warren/http.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

/* The count of Content-Length headers in the raw head, and the value of the last one. */
static size_t count_lengths(const char *head, size_t len, const char **value)
{
    size_t n = 0;
    for (size_t i = 0; i + 2 < len; i++) {
        if (memcmp(head + i, "\r\n", 2))
            continue;
        if (len - i - 2 >= 15 && !strncasecmp(head + i + 2, "Content-Length:", 15)) {
            n++;
            *value = head + i + 2 + 15;
        }
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool ends = size >= 4 && !memcmp(data + size - 4, "\r\n\r\n", 4);
    size_t len = ends ? size : size + 4;
    char *raw = malloc(len + 1), *buf = malloc(len + 1);
    FUZZ_CHECK(raw && buf);
    if (size)
        memcpy(raw, data, size);
    if (!ends)
        memcpy(raw + size, "\r\n\r\n", 4);
    raw[len] = '\0';
    memcpy(buf, raw, len + 1);
    http_head_t h;
    http_refusal_t why = {0};
    int rc = http_head_parse(buf, len, &h, &why);
    if (rc != 0) {
        FUZZ_CHECK(why.code == 400 || why.code == 417 || why.code == 501 || why.code == 505);
        FUZZ_CHECK(why.error && *why.error && why.detail[0]);
        FUZZ_CHECK(memchr(why.detail, '\0', sizeof why.detail));
    } else {
        FUZZ_CHECK(!memchr(raw, '\0', len));
        FUZZ_CHECK(h.method == 0 || h.method == HTTP_GET || h.method == HTTP_POST ||
                   h.method == HTTP_PATCH);
        FUZZ_CHECK(h.target && h.target[0] == '/');
        FUZZ_CHECK(!h.has_encoding && (h.has_host || !h.http11));
        for (const char *p = h.target; *p && *p != '?'; p++) {
            FUZZ_CHECK((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f);
            if (*p == '%') {
                unsigned v = 0;
                FUZZ_CHECK(sscanf(p + 1, "%2x", &v) == 1 && v >= 0x20 && v != 0x7f);
            }
        }
        for (size_t i = 0; i < len; i++) /* every LF ends a CRLF, every CR starts one */
            FUZZ_CHECK((raw[i] != '\n' || (i > 0 && raw[i - 1] == '\r')) &&
                       (raw[i] != '\r' || (i + 1 < len && raw[i + 1] == '\n')));
        const char *v = NULL;
        size_t n = count_lengths(raw, len, &v);
        FUZZ_CHECK(n <= 1 && h.has_length == (n == 1));
        if (n == 1) {
            while (*v == ' ' || *v == '\t')
                v++;
            FUZZ_CHECK(strtoull(v, NULL, 10) == h.content_length);
        }
        /* The same head read again reads the same. */
        http_head_t again;
        memcpy(buf, raw, len + 1);
        FUZZ_CHECK(http_head_parse(buf, len, &again, &why) == 0);
        FUZZ_CHECK(again.method == h.method && again.content_length == h.content_length &&
                   again.http11 == h.http11);
    }
    free(raw);
    free(buf);
    return 0;
}
