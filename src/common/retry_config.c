/* The retry policies the configuration defines (retry.* and actions, warren/retry.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "warren/config.h"
#include "warren/retry.h"

void retry_policy_default_of(const warren_config_t *cfg, retry_policy_t *p)
{
    char why[256];
    retry_policy_default(p);
    p->max_attempts = cfg->retry.max_attempts;
    p->backoff = cfg->retry.backoff;
    p->base_ms = cfg->retry.base_ms;
    p->factor = cfg->retry.factor;
    p->max_ms = cfg->retry.max_ms;
    /* The keys were checked when the configuration loaded; a failure keeps the built-in value. */
    if (cfg->retry.jitter && retry_jitter_parse(cfg->retry.jitter, p, why, sizeof why) != 0)
        p->jitter = JITTER_FULL;
    if (cfg->retry.retry_on && retry_on_parse(cfg->retry.retry_on, &p->retry_on, why, sizeof why))
        p->retry_on = RETRY_ON_TEMPFAIL | RETRY_ON_WORKER_LOST;
    snprintf(p->never, sizeof p->never, "%s", cfg->retry.never_retry ? cfg->retry.never_retry : "");
}

void retry_policy_of(const warren_config_t *cfg, const char *action, retry_policy_t *p)
{
    retry_policy_t dflt;
    retry_policy_default_of(cfg, &dflt);
    if (retry_policy_for(cfg->actions, action, &dflt, p) != 0)
        *p = dflt;
}

/* One line per policy: the default, then each action the key `actions` names. */
typedef struct {
    const warren_config_t *cfg;
    FILE *out;
} print_ctx_t;

static void print_action(const char *action, size_t len, void *arg)
{
    print_ctx_t *c = arg;
    char name[256], line[800];
    snprintf(name, sizeof name, "%.*s", (int)len, action);
    retry_policy_t p;
    retry_policy_of(c->cfg, name, &p);
    retry_policy_text(&p, line, sizeof line);
    fprintf(c->out, "# retry policy of %-28s %s\n", name, line);
    if (p.queue_timeout_s > 0)
        fprintf(c->out, "# queue timeout of %-27s %d s\n", name, p.queue_timeout_s);
}

void retry_policies_print(const warren_config_t *cfg, FILE *out)
{
    char line[800];
    retry_policy_t p;
    retry_policy_default_of(cfg, &p);
    retry_policy_text(&p, line, sizeof line);
    fprintf(out, "# retry policy of %-28s %s\n", "every other action", line);
    print_ctx_t c = {cfg, out};
    retry_actions_each(cfg->actions, print_action, &c);
}

void retry_fill_queue_timeouts(const warren_config_t *cfg, json_object *rows)
{
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i), *action;
        if (json_object_object_get_ex(row, "queue_timeout_s", NULL) ||
            !json_object_object_get_ex(row, "action_ref", &action))
            continue;
        retry_policy_t p;
        retry_policy_of(cfg, json_object_get_string(action), &p);
        if (p.queue_timeout_s > 0)
            json_object_object_add(row, "queue_timeout_s", json_object_new_int(p.queue_timeout_s));
    }
}

static void limits_of(const char *action, size_t len, void *arg)
{
    void **a = arg;
    const warren_config_t *cfg = a[0];
    json_object *all = a[1];
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)len, action);
    retry_policy_t p;
    retry_policy_of(cfg, name, &p);
    json_object *limits = json_object_new_object();
    json_object_object_add(limits, "queue_timeout_s",
                           p.queue_timeout_s > 0 ? json_object_new_int(p.queue_timeout_s) : NULL);
    json_object_object_add(all, name, limits);
}

char *retry_action_limits_json(const warren_config_t *cfg)
{
    json_object *all = json_object_new_object();
    void *arg[2] = {(void *)cfg, all};
    retry_actions_each(cfg->actions, limits_of, arg);
    char *text = strdup(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN));
    json_object_put(all);
    return text;
}
