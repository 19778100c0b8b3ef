/* The answers of /livez, /readyz and /metrics, which both daemons give the same way. */
#include <inttypes.h>
#include <stdio.h>
#include <json-c/json.h>
#include "warren/http.h"

void http_reply_livez(http_req_t *r, int64_t loop_beat_ms)
{
    char body[128];
    snprintf(body, sizeof body, "{\"status\":\"ok\",\"loop_beat_age_ms\":%" PRId64 "}",
             now_mono_ms() - loop_beat_ms);
    http_reply_json(r, 200, body);
}

void http_reply_metrics(http_req_t *r, const metrics_registry_t *m)
{
    metrics_out_t o;
    metrics_out_init(&o);
    metrics_render(m, &o);
    if (o.failed)
        http_error(r, 503, "unavailable", "out of memory");
    else
        http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", o.buf, o.len);
    metrics_out_free(&o);
}

void http_metrics_breakers(metrics_out_t *o, const http_breaker_ref_t *refs, size_t n)
{
    static const char *const families[][3] = {
        {"warren_breaker_state", "gauge", "Circuit breaker state: 0 closed, 1 open, 2 half-open"},
        {"warren_breaker_rejections_total", "counter", "Calls a breaker refused while open"},
        {"warren_breaker_opened_total", "counter", "Times a breaker opened"},
    };
    for (int f = 0; f < 3; f++) {
        metrics_family(o, families[f][0], families[f][1], families[f][2]);
        for (size_t i = 0; i < n; i++) {
            char labels[128] = "";
            (void)metrics_label(labels, sizeof labels, "breaker", refs[i].name);
            const breaker_t *b = refs[i].b;
            if (f == 0)
                metrics_sample(o, families[f][0], labels, (double)b->state);
            else
                metrics_sample_u64(o, families[f][0], labels,
                                   f == 1 ? b->calls_rejected : b->times_opened);
        }
    }
}

void http_ready_init(http_ready_t *h)
{
    h->body = json_object_new_object();
    h->checks = json_object_new_object();
    h->reasons = json_object_new_array();
    h->ready = true;
    h->degraded = false;
}

void http_ready_check(http_ready_t *h, const char *name, const char *state, bool ok,
                      const char *reason)
{
    json_object_object_add(h->checks, name, json_object_new_string(state));
    if (!ok) {
        json_object_array_add(h->reasons, json_object_new_string(reason));
        h->ready = false;
    }
}

void http_ready_degraded(http_ready_t *h, const char *name, const char *state, bool degraded,
                         const char *reason)
{
    json_object_object_add(h->checks, name, json_object_new_string(state));
    if (degraded) {
        json_object_array_add(h->reasons, json_object_new_string(reason));
        h->degraded = true;
    }
}

void http_ready_breaker(http_ready_t *h, const char *name, const breaker_t *b)
{
    char why[160];
    snprintf(why, sizeof why, "%s %s", name, breaker_state_name(b->state));
    json_object_object_add(h->checks, name, json_object_new_string(breaker_state_name(b->state)));
    if (b->state != BREAKER_CLOSED)
        json_object_array_add(h->reasons, json_object_new_string(why));
    h->ready &= b->state != BREAKER_OPEN;
    h->degraded |= b->state == BREAKER_HALF_OPEN;
}

void http_ready_reply(http_req_t *r, http_ready_t *h, const char *key, const char *value)
{
    const char *status = !h->ready ? "not_ready" : h->degraded ? "degraded" : "ready";
    json_object_object_add(h->body, "status", json_object_new_string(status));
    if (key)
        json_object_object_add(h->body, key, json_object_new_string(value));
    json_object_object_add(h->body, "checks", h->checks);
    json_object_object_add(h->body, "reasons", h->reasons);
    http_reply_json(r, h->ready ? 200 : 503, json_object_to_json_string_ext(h->body, 0));
    json_object_put(h->body); /* and with it checks and reasons */
}
