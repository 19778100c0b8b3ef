/* Config table: defaults, file and environment precedence, and every kind of bad input. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "common/config_table.h"
#include "warren/config.h"

static char tmp_path[64];

static const char *write_conf_n(const char *text, size_t len)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/warren-test-conf-XXXXXX");
    int fd = mkstemp(tmp_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return tmp_path;
}

static const char *write_conf(const char *text)
{
    return write_conf_n(text, strlen(text));
}

/* Load `text` as a config file; returns cfg_load's result, err filled. */
static int load_text(warren_config_t *cfg, const char *text, char *err, size_t errlen)
{
    const char *p = write_conf(text);
    int rc = cfg_load(cfg, p, err, errlen);
    unlink(p);
    return rc;
}

static int clear_env(void **state)
{
    (void)state;
    unsetenv("WARREN_CONFIG");
    for (size_t i = 0; i < cfg_table_len; i++) {
        char name[160];
        cfg_env_name(cfg_table[i].path, name, sizeof name);
        unsetenv(name);
    }
    unsetenv("WARREN__NO__SUCH_KEY");
    return 0;
}

static void test_defaults(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    assert_int_equal(cfg_load(&cfg, NULL, err, sizeof err), 0);
    assert_int_equal(cfg.rabbitmq.worker_queue_ttl_ms, 300000);
    assert_string_equal(cfg.rabbitmq.dead_letter.exchange, "attune.dlx");
    assert_string_equal(cfg.rabbitmq.dead_letter.queue, "attune.dlx.queue");
    assert_int_equal(cfg.rabbitmq.dead_letter.ttl_ms, 86400000);
    assert_string_equal(cfg.rabbitmq.exchanges.executions, "attune.executions");
    assert_true(cfg.rabbitmq.dead_letter.enabled);
    assert_int_equal(cfg.rabbitmq.queue_type, QUEUE_CLASSIC);
    assert_int_equal(cfg.circuit_breaker.messaging.failure_threshold, 5);
    assert_int_equal(cfg.circuit_breaker.messaging.success_threshold, 2);
    assert_int_equal(cfg.circuit_breaker.messaging.open_timeout_s, 30);
    assert_int_equal(cfg_source(&cfg, "database.url"), CFG_SRC_DEFAULT);
    cfg_free(&cfg);
}

static void test_every_default_parses(void **state)
{
    (void)state;
    /* Each row's default must satisfy its own type and bounds (cfg_load checks this too). */
    for (size_t i = 0; i < cfg_table_len; i++) {
        assert_non_null(cfg_table[i].help);
        assert_true(strlen(cfg_table[i].help) > 10);
        if (cfg_table[i].type == CT_INT) {
            long long v = atoll(cfg_table[i].def);
            assert_true(v >= cfg_table[i].min && v <= cfg_table[i].max);
        }
        for (size_t j = i + 1; j < cfg_table_len; j++)
            assert_string_not_equal(cfg_table[i].path, cfg_table[j].path);
    }
    assert_true(cfg_table_len <= sizeof(((warren_config_t *)0)->source));
}

static void test_file_values_and_sources(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    int rc = load_text(&cfg,
                       "message_queue = { rabbitmq = { worker_queue_ttl_ms = 1500;\n"
                       "  queue_type = \"quorum\"; dead_letter = { enabled = false; }; }; };\n"
                       "log = { level = \"debug\"; };\n",
                       err, sizeof err);
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.rabbitmq.worker_queue_ttl_ms, 1500);
    assert_int_equal(cfg.rabbitmq.queue_type, QUEUE_QUORUM);
    assert_false(cfg.rabbitmq.dead_letter.enabled);
    assert_int_equal(cfg.log.level, 0);
    assert_int_equal(cfg_source(&cfg, "message_queue.rabbitmq.worker_queue_ttl_ms"), CFG_SRC_FILE);
    assert_int_equal(cfg_source(&cfg, "message_queue.rabbitmq.prefetch"), CFG_SRC_DEFAULT);
    cfg_free(&cfg);
}

static void test_env_overrides_file(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    setenv("WARREN__MESSAGE_QUEUE__RABBITMQ__WORKER_QUEUE_TTL_MS", "777", 1);
    setenv("WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__ENABLED", "no", 1);
    setenv("WARREN__DATABASE__URL", "postgresql://u:pw@h:1/db", 1);
    int rc = load_text(&cfg, "message_queue = { rabbitmq = { worker_queue_ttl_ms = 1500; }; };\n",
                       err, sizeof err);
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.rabbitmq.worker_queue_ttl_ms, 777);
    assert_false(cfg.rabbitmq.dead_letter.enabled);
    assert_string_equal(cfg.database.url, "postgresql://u:pw@h:1/db");
    assert_int_equal(cfg_source(&cfg, "message_queue.rabbitmq.worker_queue_ttl_ms"), CFG_SRC_ENV);
    cfg_free(&cfg);
}

static void test_config_path_from_env(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    const char *p = write_conf("worker = { max_concurrency = 9; };\n");
    setenv("WARREN_CONFIG", p, 1);
    assert_int_equal(cfg_load(&cfg, NULL, err, sizeof err), 0);
    unlink(p);
    assert_int_equal(cfg.worker.max_concurrency, 9);
    cfg_free(&cfg);
}

/* Each bad file must fail and the message must contain every fragment given. */
static void expect_file_error(const char *text, const char *const *fragments)
{
    warren_config_t cfg;
    char err[512] = "";
    assert_int_equal(load_text(&cfg, text, err, sizeof err), -1);
    for (; *fragments; fragments++) {
        if (!strstr(err, *fragments))
            fail_msg("error '%s' lacks '%s'", err, *fragments);
    }
    cfg_free(&cfg);
}

static void test_unknown_key(void **state)
{
    (void)state;
    expect_file_error("log = { level = \"info\";\n  colour = true; };\n",
                      (const char *[]){":2:", "log.colour", "unknown key", NULL});
    expect_file_error("nosuch = 1;\n", (const char *[]){":1:", "nosuch", "unknown key", NULL});
    expect_file_error("log = 3;\n", (const char *[]){"log", "group", NULL});
}

static void test_wrong_type(void **state)
{
    (void)state;
    expect_file_error(
        "\nworker = { max_concurrency = \"four\"; };\n",
        (const char *[]){":2:", "worker.max_concurrency", "expected an integer", "string", NULL});
    expect_file_error("message_queue = { rabbitmq = { dead_letter = { enabled = 1; }; }; };\n",
                      (const char *[]){"dead_letter.enabled", "boolean", NULL});
    expect_file_error("database = { url = 5; };\n",
                      (const char *[]){"database.url", "string", NULL});
    expect_file_error("log = { level = { x = 1; }; };\n",
                      (const char *[]){"log.level", "group", NULL});
}

static void test_out_of_bounds(void **state)
{
    (void)state;
    expect_file_error(
        "worker = { max_concurrency = 0; };\n",
        (const char *[]){"worker.max_concurrency", "out of bounds", "[1, 1024]", NULL});
    expect_file_error("circuit_breaker = { messaging = { failure_threshold = 100000; }; };\n",
                      (const char *[]){"failure_threshold", "out of bounds", NULL});
    expect_file_error("message_queue = { rabbitmq = { worker_queue_ttl_ms = 99999999999L; }; };\n",
                      (const char *[]){"worker_queue_ttl_ms", "out of bounds", NULL});
    expect_file_error("worker = {\n action_timeouts = \"core.sleep=0\"; };\n",
                      (const char *[]){":2:", "worker.action_timeouts", "'core.sleep=0'", NULL});
    expect_file_error("message_queue = { rabbitmq = { queue_type = \"stream\"; }; };\n",
                      (const char *[]){"queue_type", "classic|quorum", "stream", NULL});
}

static void test_malformed_file(void **state)
{
    (void)state;
    expect_file_error("log = {\n  level = \"info\";\n  format = = \"json\"; };\n",
                      (const char *[]){":3:", "malformed", NULL});
    expect_file_error("worker = { max_concurrency = 4; ", (const char *[]){"malformed", NULL});
}

static void test_unreadable_file(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "";
    assert_int_equal(cfg_load(&cfg, "/nonexistent/warren.conf", err, sizeof err), -1);
    assert_string_equal(err, "/nonexistent/warren.conf: cannot read: No such file or directory");
    cfg_free(&cfg);
}

static void expect_env_error(const char *name, const char *value, const char *fragment)
{
    warren_config_t cfg;
    char err[512] = "";
    setenv(name, value, 1);
    assert_int_equal(cfg_load(&cfg, NULL, err, sizeof err), -1);
    unsetenv(name);
    if (!strstr(err, name) || !strstr(err, fragment))
        fail_msg("error '%s' lacks '%s' or '%s'", err, name, fragment);
    cfg_free(&cfg);
}

static void test_bad_env(void **state)
{
    (void)state;
    expect_env_error("WARREN__NO__SUCH_KEY", "1", "unknown key");
    expect_env_error("WARREN__WORKER__MAX_CONCURRENCY", "12abc", "expected an integer");
    expect_env_error("WARREN__WORKER__MAX_CONCURRENCY", "0", "out of bounds");
    expect_env_error("WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__ENABLED", "maybe",
                     "true or false");
    expect_env_error("WARREN__LOG__FORMAT", "xml", "auto|json|text");
    expect_env_error("WARREN__WORKER__ACTION_TIMEOUTS", "core.sleep=60,oops",
                     "'oops' is not action=seconds");
}

static void expect_mask(const char *in, const char *want)
{
    char *m = cfg_mask_url(in);
    assert_non_null(m);
    if (strcmp(m, want))
        fail_msg("cfg_mask_url(\"%s\") = \"%s\", want \"%s\"", in, m, want);
    free(m);
}

static void test_mask_url(void **state)
{
    (void)state;
    expect_mask("amqp://guest:secret@127.0.0.1:5672/%2f", "amqp://guest:****@127.0.0.1:5672/%2f");
    expect_mask("postgresql://postgres@127.0.0.1:5432/warren",
                "postgresql://postgres@127.0.0.1:5432/warren");
    expect_mask("amqps://u:s@h/v", "amqps://u:****@h/v");
    expect_mask("http://admin:pw@127.0.0.1:15672", "http://admin:****@127.0.0.1:15672");
    expect_mask("https://admin:pw@h/api", "https://admin:****@h/api");
    expect_mask("postgres://u@h:5432/db?password=hunter2&sslmode=disable",
                "postgres://u@h:5432/db?password=****&sslmode=disable");
    expect_mask("postgresql://u:a@h/db?sslpassword=k1&application_name=x&PassWord=z#frag",
                "postgresql://u:****@h/db?sslpassword=****&application_name=x&PassWord=****#frag");
    /* libpq decodes parameter names: %70assword is password */
    expect_mask("postgresql://h/db?%70assword=hunter2", "postgresql://h/db?%70assword=****");
    /* malformed passwords with raw delimiters must not escape */
    expect_mask("amqp://u:pa/ss@h:5672/%2f", "amqp://u:****@h:5672/%2f");
    expect_mask("amqp://u:p?ss#x@h/v", "amqp://u:****@h/v");
    expect_mask("amqp://u:p@ss@h/v", "amqp://u:****@h/v");
    expect_mask("postgresql://u:pw@h/db?application_name=a@b",
                "postgresql://u:****@h/db?application_name=a@b");
    /* no password: nothing to hide */
    expect_mask("amqp://h:5672/v", "amqp://h:5672/v");
    expect_mask("", "");
    /* libpq key=value strings */
    expect_mask("host=h password=hunter2 dbname=w", "host=h password=**** dbname=w");
    expect_mask("password = 'a b\\' c' user=u", "password = **** user=u");
    expect_mask("password=a\\ b user=u", "password=**** user=u");
}

static void test_mask_message(void **state)
{
    (void)state;
    /* libpq quotes the part of a URL it could not parse, which may be the password */
    char *m = cfg_mask_message("invalid percent-encoded token: \"se%zzcret\"",
                               "postgresql://u:se%zzcret@127.0.0.1:1/db");
    assert_string_equal(m, "invalid percent-encoded token: \"****\"");
    free(m);
    m = cfg_mask_message("invalid integer value \"sec\" for connection option \"port\"",
                         "postgresql://u:sec/ret@127.0.0.1:1/db");
    assert_string_equal(m, "invalid integer value \"****\" for connection option \"port\"");
    free(m);
    /* quoted text that is not secret stays */
    m = cfg_mask_message("connection to server at \"127.0.0.1\", port 1 failed: role \"bob\"",
                         "postgresql://u:pw@127.0.0.1:1/db");
    assert_string_equal(m, "connection to server at \"127.0.0.1\", port 1 failed: role \"bob\"");
    free(m);
    /* the URL itself, anywhere */
    m = cfg_mask_message("cannot use amqp://u:pw@h/v here", "amqp://u:pw@h/v");
    assert_string_equal(m, "cannot use amqp://u:****@h/v here");
    free(m);
}

static void test_print_masks_secrets(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "", *buf = NULL;
    size_t len = 0;
    setenv("WARREN__MESSAGE_QUEUE__RABBITMQ__URL", "amqp://app:hunter2@mq:5672/%2f", 1);
    assert_int_equal(cfg_load(&cfg, NULL, err, sizeof err), 0);
    FILE *f = open_memstream(&buf, &len);
    cfg_print(&cfg, f);
    fclose(f);
    assert_null(strstr(buf, "hunter2"));
    assert_non_null(strstr(buf, "amqp://app:****@mq:5672/%2f"));
    assert_non_null(strstr(buf, "env WARREN__MESSAGE_QUEUE__RABBITMQ__URL"));
    free(buf);
    cfg_free(&cfg);
}

/* The file text setting `path` to `value`, one group per line: "a = {\nb = v;\n};\n". The key's
 * line is the number of dots + 1. */
static void nested_setting(const char *path, const char *value, char *buf, size_t len)
{
    size_t n = 0, depth = 0;
    const char *p = path, *dot;
    while ((dot = strchr(p, '.'))) {
        n += (size_t)snprintf(buf + n, len - n, "%.*s = {\n", (int)(dot - p), p);
        depth++;
        p = dot + 1;
    }
    n += (size_t)snprintf(buf + n, len - n, "%s = %s;\n", p, value);
    while (depth--)
        n += (size_t)snprintf(buf + n, len - n, "};\n");
}

static long long field_value(const warren_config_t *cfg, const cfg_key_t *k)
{
    const void *p = (const char *)cfg + k->offset;
    return k->size == sizeof(int64_t) ? *(const int64_t *)p : *(const int *)p;
}

/* A file value must be refused with "FILE:LINE: key: " and the problem. */
static void expect_file_int_refused(const cfg_key_t *k, const char *value)
{
    char text[512], err[512] = "", prefix[256];
    warren_config_t cfg;
    nested_setting(k->path, value, text, sizeof text);
    int dots = 0;
    for (const char *p = k->path; *p; p++)
        dots += *p == '.';
    int rc = load_text(&cfg, text, err, sizeof err);
    snprintf(prefix, sizeof prefix, "%s:%d: %s: ", tmp_path, dots + 1, k->path);
    if (rc != -1 || strncmp(err, prefix, strlen(prefix)) || !strstr(err, "out of bounds") ||
        !strstr(err, value))
        fail_msg("%s = %s: rc %d, error '%s' (want '%s...out of bounds')", k->path, value, rc, err,
                 prefix);
    cfg_free(&cfg);
}

static void expect_env_int_refused(const cfg_key_t *k, const char *value, const char *problem)
{
    char name[160], err[512] = "";
    warren_config_t cfg;
    cfg_env_name(k->path, name, sizeof name);
    setenv(name, value, 1);
    int rc = cfg_load(&cfg, NULL, err, sizeof err);
    unsetenv(name);
    if (rc != -1 || !strstr(err, name) || !strstr(err, k->path) || !strstr(err, problem))
        fail_msg("%s=%s: rc %d, error '%s'", name, value, rc, err);
    cfg_free(&cfg);
}

static void expect_int_accepted(const cfg_key_t *k, long long v)
{
    char text[512], value[32], name[160], err[512] = "";
    warren_config_t cfg;
    snprintf(value, sizeof value, "%lld", v);
    nested_setting(k->path, value, text, sizeof text);
    if (load_text(&cfg, text, err, sizeof err) != 0 || field_value(&cfg, k) != v)
        fail_msg("%s = %s from a file: error '%s', stored %lld", k->path, value, err,
                 field_value(&cfg, k));
    cfg_free(&cfg);
    cfg_env_name(k->path, name, sizeof name);
    setenv(name, value, 1);
    int rc = cfg_load(&cfg, NULL, err, sizeof err);
    unsetenv(name);
    if (rc != 0 || field_value(&cfg, k) != v)
        fail_msg("%s=%s: error '%s', stored %lld", name, value, err, field_value(&cfg, k));
    cfg_free(&cfg);
}

/* Every integer key: its bounds fit its C field, both bounds are stored exactly from a file
 * and from the environment, and values just past them (or that would wrap onto a bound in
 * 32 bits) are refused on both paths. */
static void test_int_keys_bounds(void **state)
{
    (void)state;
    size_t n_int = 0;
    for (size_t i = 0; i < cfg_table_len; i++) {
        const cfg_key_t *k = &cfg_table[i];
        if (k->type != CT_INT)
            continue;
        n_int++;
        assert_true(k->size == sizeof(int) || k->size == sizeof(int64_t));
        if (k->size == sizeof(int) && (k->min < INT_MIN || k->max > INT_MAX))
            fail_msg("%s: bounds [%lld, %lld] do not fit its int field", k->path, k->min, k->max);
        assert_true(k->min <= k->max && k->min > LLONG_MIN && k->max < LLONG_MAX);
        expect_int_accepted(k, k->min);
        expect_int_accepted(k, k->max);
        long long past[] = {k->max + 1, k->min - 1, k->min + (1LL << 32), k->max + (1LL << 32)};
        for (size_t j = 0; j < sizeof past / sizeof past[0]; j++) {
            char value[32];
            snprintf(value, sizeof value, "%lld", past[j]);
            expect_file_int_refused(k, value);
            expect_env_int_refused(k, value, "out of bounds");
        }
        expect_env_int_refused(k, "99999999999999999999", "does not fit in 64 bits");
    }
    assert_true(n_int >= 20);
}

/* libconfig 1.5 wraps literals of 2^31 and more without an L suffix; the loader must not. */
static void test_wide_literals(void **state)
{
    (void)state;
    expect_file_error(
        "executor = { batch_size = 4294967396; };\n",
        (const char *[]){":1: executor.batch_size: 4294967396 is out of bounds", NULL});
    expect_file_error(
        "worker = { max_concurrency = 4294967297; };\n",
        (const char *[]){"worker.max_concurrency: 4294967297 is out of bounds", NULL});
    expect_file_error("executor = { batch_size = 99999999999; };\n",
                      (const char *[]){"executor.batch_size: 99999999999 is out of bounds", NULL});
    expect_file_error("executor = { batch_size = 0x100000064; };\n",
                      (const char *[]){"executor.batch_size: 4294967396 is out of bounds", NULL});
    expect_file_error("\nexecutor = { batch_size = 99999999999999999999; };\n",
                      (const char *[]){":2: 99999999999999999999 does not fit in 64 bits", NULL});
    expect_file_error("executor = { batch_size = 0x10000000000000000; };\n",
                      (const char *[]){"does not fit in 64 bits", NULL});
    expect_file_error(
        "message_queue = { rabbitmq = { dead_letter = { ttl_ms = 3000000000; }; }; };\n",
        (const char *[]){"dead_letter.ttl_ms: 3000000000 is out of bounds [1000, 2592000000]",
                         NULL});
    expect_file_error("@include \"/etc/passwd\"\n",
                      (const char *[]){":1: @include is not supported", NULL});

    /* digits in strings, comments and names, floats, suffixed and negative literals keep their meaning */
    warren_config_t cfg;
    char err[512] = "";
    int rc = load_text(
        &cfg,
        "# batch_size = 5000000000\n"
        "/* 4294967396 */ worker = { name = \"w-4294967396\\\"1\"; // 99999999999\n"
        "  max_concurrency = 0x10; kill_grace_s = +7; shutdown_timeout_s = 0; };\n"
        "message_queue = { rabbitmq = { dead_letter = { ttl_ms = 2592000000L; }; }; };\n"
        "executor = { batch_size = 300; };\n",
        err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg.worker.name, "w-4294967396\"1");
    assert_int_equal(cfg.worker.max_concurrency, 16);
    assert_int_equal(cfg.worker.kill_grace_s, 7);
    assert_int_equal(cfg.executor.batch_size, 300);
    assert_true(cfg.rabbitmq.dead_letter.ttl_ms == 2592000000LL);
    cfg_free(&cfg);
    expect_file_error(
        "executor = { batch_size = 1.5; };\n",
        (const char *[]){"executor.batch_size: expected an integer, got a float", NULL});
    expect_file_error("executor = { batch_size = -1; };\n",
                      (const char *[]){"executor.batch_size: -1 is out of bounds", NULL});
}

static bool unreadable_refused(const char *path)
{
    warren_config_t cfg;
    char err[512] = "";
    bool ok = cfg_load(&cfg, path, err, sizeof err) == -1 && !strncmp(err, path, strlen(path)) &&
              strstr(err, ": cannot read: Permission denied");
    cfg_free(&cfg);
    if (!ok)
        fprintf(stderr, "unreadable %s: error '%s'\n", path, err);
    return ok;
}

/* A path that is no readable file: named, with what is wrong, like every other config error. */
static void test_config_path_not_a_file(void **state)
{
    (void)state;
    warren_config_t cfg;
    char err[512] = "", dir[] = "/tmp/warren-test-confdir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(cfg_load(&cfg, dir, err, sizeof err), -1);
    cfg_free(&cfg);
    rmdir(dir);
    if (strncmp(err, dir, strlen(dir)) || !strstr(err, "is a directory"))
        fail_msg("directory: '%s'", err);
    /* Unreadable: root reads anything, so as root the check runs in a child as nobody. */
    const char *p = write_conf("worker = { max_concurrency = 2; };\n");
    assert_int_equal(chmod(p, 0), 0);
    if (geteuid() == 0) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(setgid(65534) == 0 && setuid(65534) == 0 && unreadable_refused(p) ? 0 : 1);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    } else {
        assert_true(unreadable_refused(p));
    }
    unlink(p);
    static const char with_nul[] = "worker = { max_concurrency = 2; };\n\0junk";
    p = write_conf_n(with_nul, sizeof with_nul - 1);
    assert_int_equal(cfg_load(&cfg, p, err, sizeof err), -1);
    cfg_free(&cfg);
    unlink(p);
    assert_non_null(strstr(err, ":2: NUL byte"));
}

static void test_env_name(void **state)
{
    (void)state;
    char name[160];
    cfg_env_name("message_queue.rabbitmq.dead_letter.ttl_ms", name, sizeof name);
    assert_string_equal(name, "WARREN__MESSAGE_QUEUE__RABBITMQ__DEAD_LETTER__TTL_MS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_every_default_parses, clear_env),
        cmocka_unit_test_setup(test_file_values_and_sources, clear_env),
        cmocka_unit_test_setup(test_env_overrides_file, clear_env),
        cmocka_unit_test_setup(test_config_path_from_env, clear_env),
        cmocka_unit_test_setup(test_unknown_key, clear_env),
        cmocka_unit_test_setup(test_wrong_type, clear_env),
        cmocka_unit_test_setup(test_out_of_bounds, clear_env),
        cmocka_unit_test_setup(test_malformed_file, clear_env),
        cmocka_unit_test_setup(test_unreadable_file, clear_env),
        cmocka_unit_test_setup(test_bad_env, clear_env),
        cmocka_unit_test_setup(test_mask_url, clear_env),
        cmocka_unit_test_setup(test_mask_message, clear_env),
        cmocka_unit_test_setup(test_int_keys_bounds, clear_env),
        cmocka_unit_test_setup(test_wide_literals, clear_env),
        cmocka_unit_test_setup(test_config_path_not_a_file, clear_env),
        cmocka_unit_test_setup(test_print_masks_secrets, clear_env),
        cmocka_unit_test_setup(test_env_name, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
