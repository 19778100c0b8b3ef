/* Builds the worker's messages as envelope bodies: running status, completion, heartbeat. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/utf8.h"
#include "worker/report_msg.h"

/* {"output":"","truncated":true} around a cut result, with room to spare. */
#define OUTPUT_WRAPPER_BYTES 64

static json_object *text_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

static void add_execution(json_object *p, const char *worker_id, const char *incarnation,
                          int64_t execution_id, int attempt)
{
    json_object_object_add(p, "execution_id", json_object_new_int64(execution_id));
    json_object_object_add(p, "attempt", json_object_new_int(attempt));
    json_object_object_add(p, "worker_id", json_object_new_string(worker_id));
    json_object_object_add(p, "incarnation", text_or_null(incarnation));
}

/* Envelope around payload (takes ownership; NULL means OOM), correlated by the execution id. */
static char *encode_execution(msg_type_t type, const char *message_id, int64_t execution_id,
                              int attempt, const char *trace_id, json_object *payload, size_t *len)
{
    char correlation[24];
    if (!payload)
        return NULL;
    snprintf(correlation, sizeof correlation, "%" PRId64, execution_id);
    return envelope_encode(type, message_id, correlation, REPORT_MSG_SOURCE, attempt,
                           trace_id && *trace_id ? trace_id : NULL, payload, len);
}

char *report_msg_running(const report_msg_running_t *r, const char *message_id, size_t *len)
{
    json_object *p = json_object_new_object();
    if (p) {
        add_execution(p, r->worker_id, r->incarnation, r->execution_id, r->attempt);
        json_object_object_add(p, "status", json_object_new_string("running"));
        json_object_object_add(p, "started_at", json_object_new_string(r->started_at));
        json_object_object_add(p, "timeout_s", json_object_new_int(r->timeout_s));
    }
    return encode_execution(MSG_EXECUTION_STATUS_CHANGED, message_id, r->execution_id, r->attempt,
                            r->trace_id, p, len);
}

/* A JSON value that serialises as `text` verbatim: the runner already checked it is strict JSON,
 * and re-encoding it through json-c could change numbers or key order. */
static json_object *raw_json(const char *text)
{
    json_object *o = json_object_new_object();
    char *copy = strdup(text);
    if (!o || !copy) {
        json_object_put(o);
        free(copy);
        return NULL;
    }
    json_object_set_serializer(o, json_object_userdata_to_json_string, copy,
                               json_object_free_userdata);
    return o;
}

static json_object *output_object(const char *text, size_t len, bool truncated)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "output", json_object_new_string_len(text, (int)len));
    if (truncated)
        json_object_object_add(o, "truncated", json_object_new_boolean(1));
    return o;
}

/* The completion payload around result (takes ownership; NULL is sent as null). */
static json_object *completion_payload(const report_msg_completion_t *c, json_object *result,
                                       bool truncated)
{
    json_object *p = json_object_new_object();
    if (!p) {
        json_object_put(result);
        return NULL;
    }
    add_execution(p, c->worker_id, c->incarnation, c->execution_id, c->attempt);
    json_object_object_add(p, "status", json_object_new_string(c->status));
    json_object_object_add(p, "result", result);
    json_object_object_add(p, "exit_code", json_object_new_int(c->exit_code));
    json_object_object_add(p, "signal", json_object_new_int(c->signal));
    json_object_object_add(p, "error", text_or_null(c->error));
    json_object_object_add(p, "stderr_tail",
                           json_object_new_string(c->stderr_tail ? c->stderr_tail : ""));
    json_object_object_add(p, "truncated", json_object_new_boolean(truncated));
    json_object_object_add(p, "started_at",
                           c->started_at && *c->started_at ? text_or_null(c->started_at) : NULL);
    json_object_object_add(p, "ended_at", json_object_new_string(c->ended_at));
    json_object_object_add(p, "duration_ms", json_object_new_int64(c->duration_ms));
    if (c->repeat)
        json_object_object_add(p, "repeat", json_object_new_boolean(1));
    return p;
}

static char *encode_completion(const report_msg_completion_t *c, const char *message_id,
                               json_object *result, bool truncated, size_t *len)
{
    return encode_execution(MSG_EXECUTION_COMPLETED, message_id, c->execution_id, c->attempt,
                            c->trace_id, completion_payload(c, result, truncated), len);
}

/* The result did not fit in one envelope: keep the longest prefix of its text that does. */
static char *encode_cut(const report_msg_completion_t *c, const char *message_id, size_t *len)
{
    size_t base_len = 0;
    char *base = encode_completion(c, message_id, NULL, true, &base_len);
    if (!base)
        return NULL;
    free(base);
    size_t room = base_len + OUTPUT_WRAPPER_BYTES < ENVELOPE_MAX_BYTES
                      ? ENVELOPE_MAX_BYTES - base_len - OUTPUT_WRAPPER_BYTES
                      : 0;
    const char *text = c->result_json;
    size_t keep = report_msg_prefix_fitting(text, strlen(text), room);
    json_object *result = output_object(text, keep, true);
    return result ? encode_completion(c, message_id, result, true, len) : NULL;
}

char *report_msg_completion(const report_msg_completion_t *c, const char *message_id, size_t *len,
                            report_msg_fate_t *fate)
{
    *fate = REPORT_MSG_RESULT_KEPT;
    json_object *result = NULL;
    if (c->result_json) {
        if (report_msg_json_depth(c->result_json) > REPORT_MSG_RESULT_MAX_DEPTH) {
            *fate = REPORT_MSG_RESULT_TOO_DEEP;
            result = output_object(c->result_json, strlen(c->result_json), false);
        } else {
            result = raw_json(c->result_json);
        }
        if (!result)
            return NULL;
    }
    char *body = encode_completion(c, message_id, result, c->truncated, len);
    if (body || !c->result_json)
        return body;
    *fate = REPORT_MSG_RESULT_TOO_LARGE;
    return encode_cut(c, message_id, len);
}

char *report_msg_heartbeat(const report_msg_heartbeat_t *h, const char *message_id, size_t *len)
{
    json_object *p = json_object_new_object();
    if (!p)
        return NULL;
    json_object_object_add(p, "worker_id", json_object_new_string(h->worker_id));
    json_object_object_add(p, "status", json_object_new_string(h->status));
    json_object_object_add(p, "capabilities",
                           h->capabilities ? json_object_get(h->capabilities)
                                           : json_object_new_array());
    json_object_object_add(p, "capacity", json_object_new_int(h->capacity));
    json_object_object_add(p, "running", json_object_new_int(h->running));
    json_object_object_add(p, "heartbeat_interval_s", json_object_new_int(h->heartbeat_interval_s));
    json_object_object_add(p, "host", json_object_new_string(h->host));
    json_object_object_add(p, "version", json_object_new_string(h->version));
    json_object_object_add(p, "started_at", json_object_new_string(h->started_at));
    json_object_object_add(p, "incarnation", text_or_null(h->incarnation));
    return envelope_encode(MSG_WORKER_HEARTBEAT, message_id, NULL, REPORT_MSG_SOURCE, 0, NULL, p,
                           len);
}

report_msg_completion_t *report_msg_completion_keep(const report_msg_completion_t *c, size_t *bytes)
{
    report_msg_completion_t k = *c;
    const char **fields[] = {&k.worker_id, &k.status,      &k.result_json,
                             &k.error,     &k.stderr_tail, &k.started_at,
                             &k.ended_at,  &k.trace_id,    &k.incarnation};
    enum { N_FIELDS = sizeof fields / sizeof fields[0] };
    size_t lens[N_FIELDS], total = sizeof k;
    for (size_t i = 0; i < N_FIELDS; i++) {
        lens[i] = *fields[i] ? strlen(*fields[i]) + 1 : 0;
        total += lens[i];
    }
    report_msg_completion_t *copy = malloc(total);
    if (!copy)
        return NULL;
    char *at = (char *)(copy + 1);
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (!*fields[i])
            continue;
        memcpy(at, *fields[i], lens[i]);
        *fields[i] = at;
        at += lens[i];
    }
    *copy = k;
    *bytes = total;
    return copy;
}

int report_msg_json_depth(const char *text)
{
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (const char *s = text; *s; s++) {
        if (in_string) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == '"')
                in_string = false;
            continue;
        }
        if (*s == '"')
            in_string = true;
        else if (*s == '{' || *s == '[')
            deepest = ++depth > deepest ? depth : deepest;
        else if (*s == '}' || *s == ']')
            depth--;
    }
    return deepest;
}

size_t report_msg_prefix_fitting(const char *text, size_t len, size_t budget)
{
    size_t used = 0, n = 0;
    for (; n < len; n++) {
        unsigned char ch = (unsigned char)text[n];
        /* json-c's escapes: \" and \\, \n style or \u00XX for control characters */
        size_t cost = ch == '"' || ch == '\\' ? 2 : ch < 0x20 ? 6 : 1;
        if (used + cost > budget)
            break;
        used += cost;
    }
    return utf8_cut(text, len, n); /* never split a character */
}
