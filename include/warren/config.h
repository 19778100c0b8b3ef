/*
 * The configuration: one declarative table (src/common/config_table.c) lists every key with
 * its type, default, bounds, secrecy and help. Parsing, validation, WARREN__* environment
 * overrides, `warren config check` and docs/configuration.md all come from that table. The
 * table also says which keys a running daemon takes on SIGHUP (cfg_reload); the others need a
 * restart.
 */
#ifndef WARREN_CONFIG_H
#define WARREN_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include "warren/common.h"

typedef enum { QUEUE_CLASSIC = 0, QUEUE_QUORUM } queue_type_t;

/* Effective configuration. Strings are owned by the struct and freed by cfg_free(). */
typedef struct warren_config {
    struct {
        char *url;
        int connect_timeout_s;
        int statement_timeout_ms; /* the executor's bound on every statement */
        bool prepared_statements; /* the executor prepares its statements once per connection */
    } database;
    struct {
        char *url;
        int heartbeat_s;
        int prefetch;
        int worker_queue_ttl_ms;
        int queue_type; /* queue_type_t */
        int connect_timeout_ms;
        int publish_timeout_ms; /* bound on every publish + confirm */
        struct {
            char *ca_file;   /* trusted CAs (PEM) for verify_peer */
            char *cert_file; /* client certificate (PEM), "" for none */
            char *key_file;  /* its private key (PEM, unencrypted) */
            bool verify_peer;
            bool verify_hostname;
        } tls; /* amqps:// URLs only */
        struct {
            bool enabled;
            char *exchange;
            char *queue;
            int64_t ttl_ms;
            char *parking_queue; /* where dead letters go when they outlive ttl_ms */
        } dead_letter;
        struct {
            char *executions;
        } exchanges;
        struct {
            char *results;
            char *heartbeats;
        } queues;
    } rabbitmq; /* key prefix: message_queue.rabbitmq */
    struct {
        int max_body_bytes; /* a consumed body over this is recorded by its prefix, never held */
        char *signing_key_file; /* "": messages are neither signed nor checked */
    } message_queue;
    struct {
        struct {
            int failure_threshold;
            int success_threshold;
            int open_timeout_s;
        } messaging;
    } circuit_breaker;
    struct {
        int level;
        int format;
    } log; /* log_level_t, log_format_t */
    struct {
        int poll_interval_ms;          /* scheduler tick when idle */
        bool listen_notify;            /* claim when the database announces new work */
        int batch_size;                /* executions claimed / results applied per round trip */
        int max_redispatches;          /* dispatches never started, dispatched again */
        int scheduled_timeout_s;       /* scheduled longer than this -> failed */
        int unconfirmed_timeout_ms;    /* scheduled, dispatch unconfirmed this long -> requested */
        int heartbeat_stale_factor;    /* worker live while heartbeat age < factor * interval */
        int running_timeout_default_s; /* a running row's timeout when nobody reported one */
        int running_grace_s;           /* running past its timeout + this, no result: abandoned */
        int monitor_interval_s;        /* timeout monitor period; 0 disables it */
        int dlq_retry_delay_ms;        /* delay before retrying a dead letter after a DB error */
        int worker_identity;           /* ident_mode_t: 0 shared, 1 per_worker */
    } executor;
    struct {
        int interval_s;  /* period of the staleness detector; 0 disables it */
        int requested_s; /* thresholds per status; 0: never stale in that status */
        int scheduled_s;
        int running_s;
        int warning_pct;           /* warn from this percentage of a threshold on */
        char *requested_by_action; /* "action=seconds,..." overrides per action */
        char *scheduled_by_action;
        char *running_by_action;
    } staleness;
    struct {
        bool enabled;   /* publish ExecutionDeadLettered and ExecutionEnded events */
        char *exchange; /* durable topic exchange, declared by the executor */
        char *dead_lettered_key;
        char *ended_prefix;   /* ExecutionEnded: <prefix>.<status>.<action_ref> */
        int interval_ms;      /* the emitter's and reconciler's period */
        int retry_initial_ms; /* first delay after a failed publish, doubling ... */
        int retry_max_ms;     /* ... up to this */
    } events;
    struct {
        int default_rate; /* records per second of a bulk redrive task that names none */
        int max_rate;     /* the highest rate a task may ask for (at most DLQ_RATE_MAX) */
    } redrive;
    struct {
        int max_redrives; /* redrives of one execution at most; 0: no limit */
    } dead_letter;
    struct {
        int interval_s; /* period of the retention rounds; 0 disables them */
        int batch_size; /* rows deleted per statement */
    } retention;
    struct {
        int retention_days; /* closed records resolved longer ago are pruned; 0: never */
    } dead_letters;
    struct {
        int retention_days; /* terminal executions ended longer ago are pruned; 0: never */
    } executions;
    struct {
        int retention_days; /* history rows of terminal executions older than this; 0: never */
    } execution_history;
    struct {
        int max_attempts; /* the default retry policy (warren/retry.h, docs/retries.md) */
        int backoff;      /* retry_backoff_t */
        int64_t base_ms;
        int factor;
        int64_t max_ms;
        char *jitter;      /* "full", "none" or "N%" */
        char *retry_on;    /* "tempfail,worker_lost" */
        char *never_retry; /* error types never retried, "a,b" */
    } retry;
    char *actions; /* per-action policies, "ACTION: field=value ...; ..." (CT_ACTIONS) */
    struct {
        char *listen;        /* host:port of the HTTP API, health and metrics; "" disables it */
        char *keys;          /* "NAME:SCOPE:SECRET,..." (secret) */
        char *keys_file;     /* one key per line: NAME SCOPE SECRET */
        char *tls_cert_file; /* PEM: HTTPS on listen when set (with tls_key_file) */
        char *tls_key_file;  /* PEM */
        char *tls_client_ca_file; /* PEM: clients must present a certificate it signed */
        bool auth_reads;          /* reads need a key too */
        int max_body_bytes;
        int max_connections;
        int max_header_bytes;
        int body_budget_bytes; /* bodies of all API connections together */
        int read_timeout_s;
        int header_timeout_s;
        int body_timeout_s;
        int idle_timeout_s;
        int statement_timeout_ms; /* the API lane's bound on a statement and on waiting for one */
        int pool_size;            /* the API lane's connections for reads (writes have one more) */
        int queue_size;           /* API requests that may wait for a connection of the lane */
        int idempotency_window_s; /* an idempotency key names its execution this long */
    } api;
    struct {
        char *name; /* "" -> WARREN_WORKER_NAME or host name */
        int max_concurrency;
        int heartbeat_interval_s;
        char *handlers_dir;
        int default_timeout_s;
        char *action_timeouts; /* "action=seconds,..." (action_timeouts.h) */
        int kill_grace_s;
        int shutdown_timeout_s;
        int max_output_bytes;
        char *http_listen;        /* host:port of /livez, /readyz, /metrics; "" disables it */
        char *http_tls_cert_file; /* PEM: HTTPS on http_listen when set */
        char *http_tls_key_file;  /* PEM */
        int retire_after_s;       /* the executor's: offline this long -> retired; 0: never */
    } worker;
    unsigned char source[128]; /* cfg_source_t per table row; managed by config.c */
    char *file;                /* the file read (NULL: none), read again by cfg_reload */
    /* The WARREN__* environment as cfg_load found it, which cfg_reload reads again: a process's
     * environment is fixed at its start, and the worker clears its own once loaded. */
    char **env;
} warren_config_t;

/* Room for every key of the table (config.c checks it). */
#define CFG_KEYS_MAX 128

typedef enum { CFG_SRC_DEFAULT = 0, CFG_SRC_FILE, CFG_SRC_ENV } cfg_source_t;

/*
 * Load defaults, then `path` (NULL: $WARREN_CONFIG, else no file), then WARREN__* variables.
 * On error returns -1 and writes "FILE:LINE: key: problem" style text into err.
 * The caller frees the result with cfg_free() (also after a failed load).
 */
int cfg_load(warren_config_t *cfg, const char *path, char *err, size_t errlen) WARN_UNUSED;
void cfg_free(warren_config_t *cfg);
/* Where the effective value of `key` came from; CFG_SRC_DEFAULT for unknown keys. */
cfg_source_t cfg_source(const warren_config_t *cfg, const char *key);

/* Keys whose effective values differ between two configurations, in table order, split into
 * those a running daemon takes on SIGHUP and those that need a restart. Paths are the table's. */
typedef struct cfg_diff {
    size_t n_reload, n_restart;
    const char *reload[CFG_KEYS_MAX];
    const char *restart[CFG_KEYS_MAX];
} cfg_diff_t;

/* Compare every key of the table between running and loaded. */
void cfg_diff(const warren_config_t *running, const warren_config_t *loaded, cfg_diff_t *d);
/* True when key is among d's reloadable changes. */
bool cfg_diff_reloads(const cfg_diff_t *d, const char *key);
/* True for a key of the table marked reloadable; false for restart-only and unknown keys. */
bool cfg_reloadable(const char *key);
/* "a, b, c" of n key paths into buf (cut with "..." when it does not fit). */
void cfg_keys_text(const char *const *keys, size_t n, char *buf, size_t len);
/*
 * Load cfg's file again (cfg->file) and the environment it was loaded with (cfg->env, not the
 * process's environment of now), as cfg_load did at start. When that
 * fails, cfg is left as it was and -1 returns with the error as cfg_load writes it. Otherwise
 * d lists what changed, the reloadable keys take their new values (and sources) in cfg, and the
 * others keep theirs until a restart; returns 0.
 */
int cfg_reload(warren_config_t *cfg, cfg_diff_t *d, char *err, size_t errlen) WARN_UNUSED;
/* cfg_reload in two steps, for a caller that checks the new configuration in between: load
 * into *loaded (which the caller frees with cfg_free, also after a failure) and compare with
 * cfg; then take loaded's values of the reloadable keys into cfg (loaded gets the old ones). */
int cfg_reload_load(const warren_config_t *cfg, warren_config_t *loaded, cfg_diff_t *d, char *err,
                    size_t errlen) WARN_UNUSED;
void cfg_reload_take(warren_config_t *cfg, warren_config_t *loaded);
/* Print every key, its effective value (secrets masked) and its source. */
void cfg_print(const warren_config_t *cfg, FILE *out);
/* Write docs/configuration.md (Markdown) generated from the table. */
void cfg_write_docs(FILE *out);
/*
 * Mask every password in a connection string: the user:secret@ of any scheme://, password and
 * sslpassword query parameters, and password=... of a libpq "key=value" string. It masks too
 * much rather than too little when the text is malformed. Returns malloc'd text (NULL: no memory).
 */
char *cfg_mask_url(const char *url);
/*
 * A library's error message about `url` made safe to show: the URL itself is masked, and so
 * is every double-quoted fragment of it that masking would hide (libpq quotes the piece it
 * could not parse, which may be part of the password). Returns malloc'd text.
 */
char *cfg_mask_message(const char *msg, const char *url);

#endif
