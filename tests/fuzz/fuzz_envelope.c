/*
 * The envelope decoder (warren/envelope.h) on any message body, and the dispatch payload inside
 * it. Invariants: a refusal says why; what is accepted is bounded, clean text; an accepted
 * envelope encodes and decodes again to the same fields.
 */
#include "fuzz.h"
#include "warren/envelope.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/utf8.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_setup(LOG_ERROR, LOG_FORMAT_TEXT);
    return 0;
}

/* A decoded text field: within its buffer, valid UTF-8, no control characters. */
static void check_field(const char *s, size_t cap, bool required)
{
    size_t n = strnlen(s, cap);
    FUZZ_CHECK(n < cap);
    FUZZ_CHECK(utf8_is_text(s, n));
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
    FUZZ_CHECK(!required || n > 0);
}

static void check_dispatch(json_object *payload)
{
    dispatch_t d, again;
    char err[ERRBUF_SIZE];
    if (dispatch_from_payload(payload, &d, err, sizeof err) != 0) {
        fuzz_check_err(err, sizeof err);
        return;
    }
    FUZZ_CHECK(d.execution_id > 0 && d.attempt >= 1 && d.timeout_s >= 0);
    check_field(d.worker_id, sizeof d.worker_id, true);
    check_field(d.action_ref, sizeof d.action_ref, true);
    json_object *p = dispatch_to_payload(&d);
    FUZZ_CHECK(p != NULL);
    FUZZ_CHECK(dispatch_from_payload(p, &again, err, sizeof err) == 0);
    FUZZ_CHECK(again.execution_id == d.execution_id && again.attempt == d.attempt &&
               again.timeout_s == d.timeout_s && !strcmp(again.worker_id, d.worker_id) &&
               !strcmp(again.action_ref, d.action_ref));
    json_object_put(p);
}

/* Encode the decoded fields as warren would and read them back. */
static void check_round_trip(const envelope_t *e)
{
    if (e->type == MSG_UNKNOWN)
        return; /* never encoded: only the types warren sends */
    size_t len = 0;
    char *text = envelope_encode(e->type, e->message_id, e->correlation_id, e->source, e->attempt,
                                 e->trace_id, json_object_get(e->payload), &len);
    if (!text)
        return; /* larger than ENVELOPE_MAX_BYTES once re-encoded */
    envelope_t back;
    char err[ERRBUF_SIZE];
    if (envelope_decode(text, len, &back, err, sizeof err) != 0) {
        fprintf(stderr, "re-encoded envelope refused: %s\n%.*s\n", err, (int)len, text);
        abort();
    }
    FUZZ_CHECK(back.type == e->type && back.attempt == e->attempt);
    FUZZ_CHECK(!strcmp(back.message_id, e->message_id));
    FUZZ_CHECK(!strcmp(back.correlation_id, e->correlation_id));
    FUZZ_CHECK(!strcmp(back.source, e->source));
    FUZZ_CHECK(!strcmp(back.trace_id, e->trace_id));
    FUZZ_CHECK(json_object_equal(back.payload, e->payload));
    envelope_free(&back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    envelope_t e;
    char err[ERRBUF_SIZE];
    if (envelope_decode(data, size, &e, err, sizeof err) != 0) {
        fuzz_check_err(err, sizeof err);
        FUZZ_CHECK(utf8_is_text(err, strlen(err))); /* it goes into a dead_letters row */
        FUZZ_CHECK(e.payload == NULL);
        return 0;
    }
    check_field(e.message_id, sizeof e.message_id, true);
    check_field(e.correlation_id, sizeof e.correlation_id, false);
    check_field(e.type_name, sizeof e.type_name, true);
    check_field(e.timestamp, sizeof e.timestamp, true);
    check_field(e.source, sizeof e.source, true);
    check_field(e.trace_id, sizeof e.trace_id, false);
    FUZZ_CHECK(e.version >= 1 && e.attempt >= 0);
    FUZZ_CHECK(json_object_is_type(e.payload, json_type_object));
    (void)jf_has_nul(e.payload);
    if (e.type == MSG_EXECUTION_REQUESTED)
        check_dispatch(e.payload);
    check_round_trip(&e);
    envelope_free(&e);
    return 0;
}
