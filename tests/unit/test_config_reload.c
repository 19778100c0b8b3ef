/* SIGHUP's half in the config module: which keys changed and which reload, on the whole table;
 * a reload takes the reloadable ones, keeps the rest, and a bad file changes nothing; the
 * daemon's hooks around it (reload.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "common/config_table.h"
#include "warren/config.h"
#include "warren/reload.h"

/* The keys a running daemon takes on SIGHUP. A change to this list is a change to what the
 * daemons must hand on in their reload step (executor.c, worker.c): make it on purpose. */
static const char *const reloadable[] = {
    "circuit_breaker.messaging.failure_threshold",
    "circuit_breaker.messaging.success_threshold",
    "circuit_breaker.messaging.open_timeout_s",
    "log.level",
    "log.format",
    "executor.poll_interval_ms",
    "executor.batch_size",
    "executor.max_redispatches",
    "executor.scheduled_timeout_s",
    "executor.unconfirmed_timeout_ms",
    "executor.heartbeat_stale_factor",
    "executor.running_timeout_default_s",
    "executor.running_grace_s",
    "executor.monitor_interval_s",
    "executor.dlq_retry_delay_ms",
    "staleness.requested_s",
    "staleness.scheduled_s",
    "staleness.running_s",
    "staleness.warning_pct",
    "staleness.requested_by_action",
    "staleness.scheduled_by_action",
    "staleness.running_by_action",
    "events.retry_initial_ms",
    "events.retry_max_ms",
    "redrive.default_rate",
    "redrive.max_rate",
    "dead_letter.max_redrives",
    "retention.batch_size",
    "dead_letters.retention_days",
    "executions.retention_days",
    "execution_history.retention_days",
    "retry.max_attempts",
    "retry.backoff",
    "retry.base_ms",
    "retry.factor",
    "retry.max_ms",
    "retry.jitter",
    "retry.retry_on",
    "retry.never_retry",
    "actions",
    "api.keys",
    "api.keys_file",
    "api.tls_cert_file",
    "api.tls_key_file",
    "api.tls_client_ca_file",
    "api.auth_reads",
    "api.statement_timeout_ms",
    "api.idempotency_window_s",
    "worker.heartbeat_interval_s",
    "worker.default_timeout_s",
    "worker.action_timeouts",
    "worker.kill_grace_s",
    "worker.shutdown_timeout_s",
    "worker.max_output_bytes",
    "worker.retire_after_s",
};

static char conf_path[64];

static void write_file(const char *text)
{
    FILE *f = fopen(conf_path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    (void)state;
    unsetenv("WARREN_CONFIG");
    for (size_t i = 0; i < cfg_table_len; i++) {
        char name[160];
        cfg_env_name(cfg_table[i].path, name, sizeof name);
        unsetenv(name);
    }
    snprintf(conf_path, sizeof conf_path, "/tmp/warren-test-reload-XXXXXX");
    int fd = mkstemp(conf_path);
    assert_true(fd >= 0);
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(conf_path);
    return 0;
}

static bool listed(const char *const *keys, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(keys[i], key))
            return true;
    return false;
}

static void test_table_marks(void **state)
{
    (void)state;
    size_t n = sizeof reloadable / sizeof reloadable[0], marked = 0;
    for (size_t i = 0; i < cfg_table_len; i++) {
        const cfg_key_t *k = &cfg_table[i];
        assert_int_equal(cfg_reloadable(k->path), listed(reloadable, n, k->path));
        marked += k->reloadable;
    }
    /* connections are never swapped under a running daemon */
    assert_false(cfg_reloadable("database.url"));
    assert_false(cfg_reloadable("message_queue.rabbitmq.url"));
    assert_int_equal(marked, n);
    assert_false(cfg_reloadable("no.such.key"));
}

/* A value for key k other than its default, as environment text. */
static void other_value(const cfg_key_t *k, char *buf, size_t len)
{
    switch (k->type) {
    case CT_INT: {
        long long def = atoll(k->def);
        snprintf(buf, len, "%lld", def == k->max ? k->min : def + 1 > k->max ? k->max : def + 1);
        return;
    }
    case CT_BOOL: snprintf(buf, len, "%s", !strcmp(k->def, "true") ? "false" : "true"); return;
    case CT_ENUM:
        snprintf(buf, len, "%s", strcmp(k->choices[0], k->def) ? k->choices[0] : k->choices[1]);
        return;
    case CT_STRING:
        /* checked strings: a list of action=seconds, or a retry policy's fields */
        snprintf(buf, len, "%s",
                 !strcmp(k->path, "retry.jitter")        ? "10%"
                 : !strcmp(k->path, "retry.retry_on")    ? "failed"
                 : !strcmp(k->path, "retry.never_retry") ? "ValueError"
                 : k->check                              ? "some.action=7"
                                                         : "changed-value");
        return;
    case CT_ACTIONS: snprintf(buf, len, "%s", "some.action: max_attempts=2"); return;
    }
}

/* Every row, changed alone, is found, and in the list its mark says. */
static void test_each_key_diffs_alone(void **state)
{
    (void)state;
    warren_config_t base, changed;
    char err[512] = "";
    assert_int_equal(cfg_load(&base, NULL, err, sizeof err), 0);
    for (size_t i = 0; i < cfg_table_len; i++) {
        const cfg_key_t *k = &cfg_table[i];
        char name[160], value[128];
        cfg_env_name(k->path, name, sizeof name);
        other_value(k, value, sizeof value);
        setenv(name, value, 1);
        assert_int_equal(cfg_load(&changed, NULL, err, sizeof err), 0);
        unsetenv(name);
        cfg_diff_t d;
        cfg_diff(&base, &changed, &d);
        assert_int_equal(d.n_reload + d.n_restart, 1);
        assert_string_equal(k->reloadable ? d.reload[0] : d.restart[0], k->path);
        assert_int_equal(cfg_diff_reloads(&d, k->path), k->reloadable);
        cfg_diff(&base, &base, &d);
        assert_int_equal(d.n_reload + d.n_restart, 0);
        cfg_free(&changed);
    }
    cfg_free(&base);
}

static void test_diff_in_table_order(void **state)
{
    (void)state;
    warren_config_t a, b;
    char err[512] = "";
    write_file("log = { level = \"info\"; };\n");
    assert_int_equal(cfg_load(&a, conf_path, err, sizeof err), 0);
    write_file("worker = { action_timeouts = \"x.y=3\"; max_concurrency = 9; };\n"
               "log = { level = \"debug\"; };\n"
               "database = { url = \"postgresql://other/db\"; };\n"
               "executor = { poll_interval_ms = 50; };\n");
    assert_int_equal(cfg_load(&b, conf_path, err, sizeof err), 0);
    cfg_diff_t d;
    cfg_diff(&a, &b, &d);
    assert_int_equal(d.n_reload, 3);
    assert_string_equal(d.reload[0], "log.level");
    assert_string_equal(d.reload[1], "executor.poll_interval_ms");
    assert_string_equal(d.reload[2], "worker.action_timeouts");
    assert_int_equal(d.n_restart, 2);
    assert_string_equal(d.restart[0], "database.url");
    assert_string_equal(d.restart[1], "worker.max_concurrency");
    char text[64];
    cfg_keys_text(d.restart, d.n_restart, text, sizeof text);
    assert_string_equal(text, "database.url, worker.max_concurrency");
    cfg_keys_text(d.restart, d.n_restart, text, 20);
    assert_string_equal(text, "database.url, wo...");
    cfg_keys_text(d.restart, 0, text, sizeof text);
    assert_string_equal(text, "");
    cfg_free(&a);
    cfg_free(&b);
}

static void test_reload_takes_reloadable_keys(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    write_file("log = { level = \"info\"; };\n"
               "message_queue = { rabbitmq = { prefetch = 64; }; };\n");
    setenv("WARREN__EXECUTOR__BATCH_SIZE", "7", 1);
    assert_int_equal(cfg_load(&cfg, conf_path, err, sizeof err), 0);
    assert_string_equal(cfg.file, conf_path);
    /* The environment as it was at the load counts again, not the process's of now (the
     * worker clears its WARREN__* variables once loaded). */
    unsetenv("WARREN__EXECUTOR__BATCH_SIZE");
    setenv("WARREN__EXECUTOR__POLL_INTERVAL_MS", "11", 1);
    write_file("log = { level = \"debug\"; };\n"
               "message_queue = { rabbitmq = { prefetch = 10; }; };\n"
               "worker = { action_timeouts = \"a.b=5\"; };\n");
    cfg_diff_t d;
    assert_int_equal(cfg_reload(&cfg, &d, err, sizeof err), 0);
    unsetenv("WARREN__EXECUTOR__POLL_INTERVAL_MS");
    assert_int_equal(cfg.executor.poll_interval_ms, 200);
    assert_int_equal(d.n_reload, 2);
    assert_int_equal(d.n_restart, 1);
    assert_string_equal(d.restart[0], "message_queue.rabbitmq.prefetch");
    assert_int_equal(cfg.log.level, 0); /* debug */
    assert_int_equal(cfg.executor.batch_size, 7);
    assert_int_equal(cfg_source(&cfg, "executor.batch_size"), CFG_SRC_ENV);
    assert_string_equal(cfg.worker.action_timeouts, "a.b=5");
    assert_int_equal(cfg_source(&cfg, "worker.action_timeouts"), CFG_SRC_FILE);
    assert_int_equal(cfg.rabbitmq.prefetch, 64); /* until a restart */
    assert_int_equal(cfg_source(&cfg, "message_queue.rabbitmq.prefetch"), CFG_SRC_FILE);
    /* a key dropped from the file goes back to its default */
    write_file("message_queue = { rabbitmq = { prefetch = 10; }; };\n");
    assert_int_equal(cfg_reload(&cfg, &d, err, sizeof err), 0);
    assert_int_equal(cfg.log.level, 1); /* info */
    assert_string_equal(cfg.worker.action_timeouts, "");
    assert_int_equal(cfg_source(&cfg, "log.level"), CFG_SRC_DEFAULT);
    cfg_free(&cfg);
}

static void test_bad_file_changes_nothing(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    write_file("log = { level = \"warn\"; };\nexecutor = { batch_size = 5; };\n");
    assert_int_equal(cfg_load(&cfg, conf_path, err, sizeof err), 0);
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"log = { level = \"debug\"; };\nexecutor = { batch_size = ; };\n", ":2: malformed file"},
        {"log = { level = \"debug\"; };\nexecutor = { batch_sise = 1; };\n",
         ":2: executor.batch_sise: unknown key"},
        {"log = { level = \"loud\"; };\n", ":1: log.level: expected one of"},
        {"executor = { batch_size = 0; };\n", ":1: executor.batch_size: 0 is out of bounds"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(bad[i].text);
        cfg_diff_t d = {.n_reload = 99};
        assert_int_equal(cfg_reload(&cfg, &d, err, sizeof err), -1);
        assert_non_null(strstr(err, conf_path));
        assert_non_null(strstr(err, bad[i].says));
        assert_int_equal(cfg.log.level, 2); /* warn */
        assert_int_equal(cfg.executor.batch_size, 5);
    }
    unlink(conf_path); /* a file gone is an error too, not a return to the defaults */
    cfg_diff_t d;
    assert_int_equal(cfg_reload(&cfg, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read"));
    assert_int_equal(cfg.executor.batch_size, 5);
    cfg_free(&cfg);
}

typedef struct hook_calls {
    int prepared, applied;
    size_t changed;
    bool refuse;
} hook_calls_t;

static int prepare(void *arg, const warren_config_t *loaded, char *err, size_t errlen)
{
    hook_calls_t *c = arg;
    c->prepared++;
    assert_int_equal(loaded->executor.batch_size, 9); /* the new value, before it is taken */
    if (c->refuse)
        snprintf(err, errlen, "%s: refused by the daemon", loaded->file);
    return c->refuse ? -1 : 0;
}

static void apply(void *arg, const cfg_diff_t *d)
{
    hook_calls_t *c = arg;
    c->applied++;
    c->changed = d->n_reload;
}

/* The daemon's hooks: prepare can refuse the whole reload; apply runs after every one taken. */
static void test_reload_hooks(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    write_file("executor = { batch_size = 5; };\n");
    assert_int_equal(cfg_load(&cfg, conf_path, err, sizeof err), 0);
    write_file("executor = { batch_size = 9; };\n");
    hook_calls_t calls = {.refuse = true};
    const reload_hooks_t hooks = {.prepare = prepare, .apply = apply, .arg = &calls};
    assert_int_equal(reload_config(&cfg, &hooks), -1);
    assert_int_equal(cfg.executor.batch_size, 5);
    assert_int_equal(calls.prepared, 1);
    assert_int_equal(calls.applied, 0);
    calls.refuse = false;
    assert_int_equal(reload_config(&cfg, &hooks), 1);
    assert_int_equal(cfg.executor.batch_size, 9);
    assert_int_equal(calls.applied, 1);
    assert_int_equal(calls.changed, 1);
    /* nothing changed: apply still runs (what a key names may have changed) */
    assert_int_equal(reload_config(&cfg, &hooks), 0);
    assert_int_equal(calls.applied, 2);
    assert_int_equal(calls.changed, 0);
    cfg_free(&cfg);
}

static void test_docs_say_what_reloads(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    cfg_write_docs(f);
    fclose(f);
    assert_non_null(strstr(text, "| reload |"));
    assert_non_null(strstr(text, "SIGHUP"));
    assert_non_null(strstr(text, "| `WARREN__LOG__LEVEL` | yes |"));
    assert_non_null(strstr(text, "| `WARREN__DATABASE__URL` | restart |"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table_marks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_key_diffs_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_in_table_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_takes_reloadable_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_file_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_hooks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_docs_say_what_reloads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
