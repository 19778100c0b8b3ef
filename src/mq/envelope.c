/* The JSON message envelope: strict, bounded decoding with field-named errors, and encoding. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "warren/envelope.h"
#include "warren/ids.h"
#include "warren/jsonfield.h"
#include "warren/log.h"
#include "warren/timestamp.h"
#include "warren/utf8.h"

static const char *const type_names[] = {
    [MSG_UNKNOWN] = "Unknown",
    [MSG_EXECUTION_REQUESTED] = "ExecutionRequested",
    [MSG_EXECUTION_STATUS_CHANGED] = "ExecutionStatusChanged",
    [MSG_EXECUTION_COMPLETED] = "ExecutionCompleted",
    [MSG_WORKER_HEARTBEAT] = "WorkerHeartbeat",
    [MSG_EXECUTION_CANCEL_REQUESTED] = "ExecutionCancelRequested",
    [MSG_EXECUTION_DEAD_LETTERED] = "ExecutionDeadLettered",
    [MSG_EXECUTION_ENDED] = "ExecutionEnded",
};
#define N_TYPES (sizeof type_names / sizeof type_names[0])

const char *msg_type_name(msg_type_t t)
{
    return (size_t)t < N_TYPES ? type_names[t] : type_names[MSG_UNKNOWN];
}

msg_type_t msg_type_parse(const char *s)
{
    for (size_t i = 1; s && i < N_TYPES; i++)
        if (!strcmp(s, type_names[i]))
            return (msg_type_t)i;
    return MSG_UNKNOWN;
}

/* ---- decoding ---- */

/* Parse the whole body as one JSON value; only whitespace may follow it. */
static json_object *parse_body(const char *body, size_t len, char *err, size_t errlen)
{
    json_tokener *tok = json_tokener_new_ex(ENVELOPE_MAX_DEPTH);
    if (!tok) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
    json_object *root = json_tokener_parse_ex(tok, body, (int)len);
    size_t end = json_tokener_get_parse_end(tok);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (jerr == json_tokener_continue) {
        /* Everything was consumed; a terminating NUL tells the tokener the input is over
         * (a bare number is complete only then). */
        root = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        end = len;
    }
    json_tokener_free(tok);
    if (jerr == json_tokener_success && !root) {
        snprintf(err, errlen, "body is null, expected a JSON object");
        return NULL;
    }
    if (jerr == json_tokener_error_parse_eof)
        snprintf(err, errlen, "body is truncated JSON (%zu bytes end inside a value)", len);
    else if (jerr == json_tokener_error_depth)
        snprintf(err, errlen, "body nests deeper than %d levels (at byte %zu)", ENVELOPE_MAX_DEPTH,
                 end);
    else if (jerr != json_tokener_success)
        snprintf(err, errlen, "body is not valid JSON at byte %zu: %s", end,
                 json_tokener_error_desc(jerr));
    if (jerr != json_tokener_success)
        return NULL;
    while (end < len && isspace((unsigned char)body[end]))
        end++;
    if (end < len) {
        snprintf(err, errlen, "trailing data after the JSON value at byte %zu", end);
        json_object_put(root);
        return NULL;
    }
    return root;
}

/*
 * json-c reads NaN, Infinity and -Infinity even in strict mode. JSON (RFC 8259) has no such
 * numbers, and PostgreSQL's jsonb refuses them: one in a report's result would fail the
 * executor's whole batch. A number too large for a double is not one of them (json-c keeps its
 * text, and jsonb its value). The tokener's depth limit bounds the recursion.
 */
static bool has_non_number(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_double: {
        const char *text = json_object_to_json_string(v);
        return !isdigit((unsigned char)text[text[0] == '-']);
    }
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (has_non_number(json_object_array_get_idx(v, i)))
                return true;
        return false;
    case json_type_object: {
        json_object_object_foreach(v, key, val) {
            (void)key;
            if (has_non_number(val))
                return true;
        }
        return false;
    }
    default: return false;
    }
}

/* Size, NUL and UTF-8 checks before the tokener sees the bytes. */
static int check_raw(const char *body, size_t len, char *err, size_t errlen)
{
    size_t at;
    if (len == 0) {
        snprintf(err, errlen, "body is empty");
        return -1;
    }
    if (len > ENVELOPE_MAX_BYTES) {
        snprintf(err, errlen, "body is %zu bytes, the limit is %d", len, ENVELOPE_MAX_BYTES);
        return -1;
    }
    const char *nul = memchr(body, '\0', len);
    if (nul) {
        snprintf(err, errlen, "body contains a NUL byte at byte %zu", (size_t)(nul - body));
        return -1;
    }
    if (!utf8_valid(body, len, &at)) {
        snprintf(err, errlen, "body is not valid UTF-8 at byte %zu", at);
        return -1;
    }
    return 0;
}

static int decode_headers(const jf_t *root, envelope_t *e)
{
    json_object *h;
    int64_t attempt = 0;
    if (jf_object(root, "headers", true, &h) < 0)
        return -1;
    jf_t hr = {h, "headers", root->err, root->errlen};
    if (jf_string_copy(&hr, "source", true, e->source, sizeof e->source) < 0 ||
        jf_int(&hr, "attempt", true, 0, INT32_MAX, &attempt) < 0 ||
        jf_string_copy(&hr, "trace_id", false, e->trace_id, sizeof e->trace_id) < 0)
        return -1;
    e->attempt = (int)attempt;
    return 0;
}

static int decode_fields(json_object *obj, envelope_t *e, char *err, size_t errlen)
{
    jf_t root = {obj, NULL, err, errlen};
    int64_t version = 0;
    json_object *payload;
    if (jf_string_copy(&root, "message_id", true, e->message_id, sizeof e->message_id) < 0 ||
        jf_string_copy(&root, "correlation_id", false, e->correlation_id,
                       sizeof e->correlation_id) < 0 ||
        jf_string_copy(&root, "message_type", true, e->type_name, sizeof e->type_name) < 0 ||
        jf_int(&root, "version", true, 1, INT32_MAX, &version) < 0 ||
        jf_string_copy(&root, "timestamp", true, e->timestamp, sizeof e->timestamp) < 0 ||
        decode_headers(&root, e) != 0 || jf_object(&root, "payload", true, &payload) < 0)
        return -1;
    if (ts_parse(e->timestamp, &e->timestamp_us) != 0) {
        snprintf(err, errlen, "field 'timestamp': '%s' is not an RFC 3339 date-time", e->timestamp);
        return -1;
    }
    e->version = (int)version;
    e->type = msg_type_parse(e->type_name);
    e->payload = json_object_get(payload);
    return 0;
}

int envelope_decode(const void *body, size_t len, envelope_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_raw(body, len, err, errlen) != 0)
        return -1;
    json_object *root = parse_body(body, len, err, errlen);
    if (!root)
        return -1;
    int rc = -1;
    if (!json_object_is_type(root, json_type_object))
        snprintf(err, errlen, "body is %s, expected a JSON object", jf_kind(root));
    else if (has_non_number(root))
        snprintf(err, errlen,
                 "body is not valid JSON: it holds NaN or Infinity, which are no "
                 "JSON numbers");
    else
        rc = decode_fields(root, out, err, errlen);
    json_object_put(root);
    if (rc != 0)
        envelope_free(out);
    return rc;
}

void envelope_free(envelope_t *e)
{
    json_object_put(e->payload);
    e->payload = NULL;
}

/* ---- encoding ---- */

static json_object *string_or_null(const char *s)
{
    return s && *s ? json_object_new_string(s) : NULL;
}

char *envelope_encode(msg_type_t type, const char *message_id, const char *correlation_id,
                      const char *source, int attempt, const char *trace_id, json_object *payload,
                      size_t *len)
{
    char id[40], ts[TS_TEXT_MAX];
    if (!payload)
        payload = json_object_new_object();
    if (type == MSG_UNKNOWN || (size_t)type >= N_TYPES || !payload) {
        json_object_put(payload);
        return NULL;
    }
    if (!message_id && envelope_new_id(id, sizeof id) != 0) {
        json_object_put(payload);
        return NULL;
    }
    ts_now(ts, sizeof ts);
    json_object *headers = json_object_new_object();
    json_object_object_add(headers, "source", json_object_new_string(source ? source : ""));
    json_object_object_add(headers, "attempt", json_object_new_int(attempt));
    json_object_object_add(headers, "trace_id", string_or_null(trace_id));
    json_object *root = json_object_new_object();
    json_object_object_add(root, "message_id",
                           json_object_new_string(message_id ? message_id : id));
    json_object_object_add(root, "correlation_id", string_or_null(correlation_id));
    json_object_object_add(root, "message_type", json_object_new_string(msg_type_name(type)));
    json_object_object_add(root, "version", json_object_new_int(ENVELOPE_VERSION));
    json_object_object_add(root, "timestamp", json_object_new_string(ts));
    json_object_object_add(root, "headers", headers);
    json_object_object_add(root, "payload", payload);
    size_t n = 0;
    const char *text = json_object_to_json_string_length(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    char *copy = text && n <= ENVELOPE_MAX_BYTES ? strndup(text, n) : NULL;
    json_object_put(root);
    if (copy && len)
        *len = n;
    return copy;
}

/* ---- dispatch payload ---- */

/* The payload must be an object: -1 with the reason otherwise. */
static int payload_object(json_object *payload, char *err, size_t errlen)
{
    if (json_object_is_type(payload, json_type_object))
        return 0;
    if (payload)
        snprintf(err, errlen, "field 'payload': expected an object, got %s", jf_kind(payload));
    else
        snprintf(err, errlen, "field 'payload' is missing");
    return -1;
}

/* The payload's worker_id, read into worker_id, must be a valid worker id. */
static int payload_worker_id(const jf_t *p, char *worker_id, size_t cap)
{
    if (jf_string_copy(p, "worker_id", true, worker_id, cap) < 0)
        return -1;
    if (!ids_worker_valid(worker_id)) {
        snprintf(p->err, p->errlen, "field 'payload.worker_id': '%s' is not a valid worker id",
                 worker_id);
        return -1;
    }
    return 0;
}

int dispatch_from_payload(json_object *payload, dispatch_t *out, char *err, size_t errlen)
{
    jf_t p = {payload, "payload", err, errlen};
    int64_t attempt = 1, timeout_s = 0;
    json_object *params = NULL;
    char deadline[TS_TEXT_MAX] = "";
    memset(out, 0, sizeof *out);
    if (payload_object(payload, err, errlen) != 0)
        return -1;
    if (jf_execution_id(&p, true, &out->execution_id) < 0 ||
        payload_worker_id(&p, out->worker_id, sizeof out->worker_id) < 0 ||
        jf_string_copy(&p, "action_ref", true, out->action_ref, sizeof out->action_ref) < 0 ||
        jf_object(&p, "params", false, &params) < 0 ||
        jf_int(&p, "attempt", false, 1, INT32_MAX, &attempt) < 0 ||
        jf_int(&p, "timeout_s", false, 0, INT32_MAX, &timeout_s) < 0 ||
        jf_string_copy(&p, "start_deadline", false, deadline, sizeof deadline) < 0)
        return -1;
    if (deadline[0] && ts_parse(deadline, &out->start_deadline_us) != 0) {
        snprintf(err, errlen, "field 'payload.start_deadline': '%s' is not an RFC 3339 date-time",
                 deadline);
        return -1;
    }
    out->params = params;
    out->attempt = (int)attempt;
    out->timeout_s = (int)timeout_s;
    return 0;
}

json_object *dispatch_to_payload(const dispatch_t *d)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "execution_id", json_object_new_int64(d->execution_id));
    json_object_object_add(o, "worker_id", json_object_new_string(d->worker_id));
    json_object_object_add(o, "action_ref", json_object_new_string(d->action_ref));
    json_object_object_add(o, "params",
                           d->params ? json_object_get(d->params) : json_object_new_object());
    json_object_object_add(o, "attempt", json_object_new_int(d->attempt));
    json_object_object_add(o, "timeout_s", json_object_new_int(d->timeout_s));
    if (d->start_deadline_us > 0) {
        char deadline[TS_TEXT_MAX];
        ts_format(d->start_deadline_us, deadline, sizeof deadline);
        json_object_object_add(o, "start_deadline", json_object_new_string(deadline));
    }
    return o;
}

/* ---- cancel request payload ---- */

int cancel_from_payload(json_object *payload, cancel_request_t *out, char *err, size_t errlen)
{
    jf_t p = {payload, "payload", err, errlen};
    int64_t attempt = 0;
    memset(out, 0, sizeof *out);
    if (payload_object(payload, err, errlen) != 0 ||
        jf_execution_id(&p, true, &out->execution_id) < 0 ||
        jf_int(&p, "attempt", true, 1, INT32_MAX, &attempt) < 0 ||
        payload_worker_id(&p, out->worker_id, sizeof out->worker_id) < 0 ||
        jf_string_copy(&p, "requested_by", false, out->requested_by, sizeof out->requested_by) < 0)
        return -1;
    out->attempt = (int)attempt;
    return 0;
}

json_object *cancel_to_payload(const cancel_request_t *c)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "execution_id", json_object_new_int64(c->execution_id));
    json_object_object_add(o, "attempt", json_object_new_int(c->attempt));
    json_object_object_add(o, "worker_id", json_object_new_string(c->worker_id));
    json_object_object_add(o, "requested_by", json_object_new_string(c->requested_by));
    return o;
}

/* ---- ids ---- */

/* Kernel randomness. Without it ids could collide, which nothing may rely on, so there is no
 * weaker fallback: -1, logged, and the caller sends nothing. */
static int random_bytes(unsigned char *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(b + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
        else if (errno != EINTR) {
            log_kv(LOG_ERROR, "no random bytes from the kernel: no id made", "error",
                   r < 0 ? strerror(errno) : "none returned", NULL);
            return -1;
        }
    }
    return 0;
}

int envelope_new_id(char *buf, size_t len)
{
    unsigned char b[16];
    if (len > 0)
        buf[0] = '\0';
    if (random_bytes(b, sizeof b) != 0)
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}

int envelope_new_incarnation(char *buf, size_t len)
{
    unsigned char b[INCARNATION_LEN / 2];
    if (len > 0)
        buf[0] = '\0';
    if (random_bytes(b, sizeof b) != 0)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < sizeof b && n + 3 <= len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%02x", b[i]);
    if (len > 0)
        buf[n < len ? n : len - 1] = '\0';
    return 0;
}
