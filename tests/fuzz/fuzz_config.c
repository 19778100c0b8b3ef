/*
 * The config loader (warren/config.h): a file of any content plus WARREN__* environment
 * overrides, then `config check`'s printing and the masking of connection strings.
 * Input: lines before a line "%%" are overrides, NAME=VALUE, set as WARREN__NAME (at most 16);
 * the rest (or all of it, without "%%") is the file, read through a memfd by its /proc path.
 * Invariants: a refusal says why; an accepted configuration has every integer within its
 * table bounds, every enum a valid choice, and every string set.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common/config_table.h"
#include "fuzz.h"
#include "warren/config.h"

#define MAX_OVERRIDES 16

static int file_fd = -1;
static char file_path[64];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    file_fd = memfd_create("warren.conf", MFD_CLOEXEC);
    FUZZ_CHECK(file_fd >= 0);
    snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(devnull != NULL);
    /* Only the input's overrides count: none from the environment the fuzzer runs in. */
    unsetenv("WARREN_CONFIG");
    for (char **e = environ; *e;) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "WARREN__", 8) != 0 || !eq) {
            e++;
            continue;
        }
        char name[256];
        if ((size_t)(eq - *e) >= sizeof name) {
            e++;
            continue;
        }
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        unsetenv(name); /* environ shifts down: look at *e again */
    }
    return 0;
}

static void write_file(const uint8_t *data, size_t size)
{
    FUZZ_CHECK(ftruncate(file_fd, 0) == 0);
    size_t off = 0;
    while (off < size) {
        ssize_t n = pwrite(file_fd, data + off, size - off, (off_t)off);
        FUZZ_CHECK(n > 0 || errno == EINTR);
        if (n > 0)
            off += (size_t)n;
    }
}

/* The overrides before "%%\n": set, and their names kept in names[] for unsetting. */
static size_t set_overrides(const uint8_t **data, size_t *size, char names[][128])
{
    const char *text = (const char *)*data, *end = text + *size;
    const char *sep = memmem(text, *size, "%%\n", 3);
    if (!sep || (sep != text && sep[-1] != '\n'))
        return 0;
    size_t n = 0;
    for (const char *line = text; line < sep && n < MAX_OVERRIDES;) {
        const char *eol = memchr(line, '\n', (size_t)(sep - line));
        const char *eq = memchr(line, '=', (size_t)(eol - line));
        if (eq && eq > line && !memchr(line, '\0', (size_t)(eol - line)) &&
            (size_t)(eq - line) < 100) {
            char value[512];
            snprintf(names[n], 128, "WARREN__%.*s", (int)(eq - line), line);
            snprintf(value, sizeof value, "%.*s", (int)(eol - eq - 1), eq + 1);
            if (setenv(names[n], value, 1) == 0)
                n++;
        }
        line = eol + 1;
    }
    *data = (const uint8_t *)sep + 3;
    *size = (size_t)(end - (sep + 3));
    return n;
}

static void check_config(const warren_config_t *cfg)
{
    for (size_t i = 0; i < cfg_table_len; i++) {
        const cfg_key_t *k = &cfg_table[i];
        const char *field = (const char *)cfg + k->offset;
        long long v = 0;
        int i32;
        int64_t i64;
        char *str;
        switch (k->type) {
        case CT_STRING:
        case CT_ACTIONS: /* per-action settings, kept as their text form */
            memcpy(&str, field, sizeof str);
            FUZZ_CHECK(str != NULL);
            break;
        case CT_INT:
            if (k->size == sizeof i64)
                memcpy(&i64, field, sizeof i64), v = i64;
            else
                memcpy(&i32, field, sizeof i32), v = i32;
            FUZZ_CHECK(v >= k->min && v <= k->max);
            break;
        case CT_BOOL: break;
        case CT_ENUM: {
            size_t n = 0;
            while (k->choices[n])
                n++;
            memcpy(&i32, field, sizeof i32);
            FUZZ_CHECK(i32 >= 0 && (size_t)i32 < n);
            break;
        }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char names[MAX_OVERRIDES][128];
    size_t n = set_overrides(&data, &size, names);
    write_file(data, size);
    warren_config_t cfg;
    char err[ERRBUF_SIZE];
    if (cfg_load(&cfg, file_path, err, sizeof err) == 0) {
        check_config(&cfg);
        cfg_print(&cfg, devnull);
        char *masked = cfg_mask_url(cfg.database.url);
        char *msg = cfg_mask_message(cfg.rabbitmq.url, cfg.rabbitmq.url);
        FUZZ_CHECK(masked != NULL && msg != NULL);
        free(masked);
        free(msg);
    } else {
        fuzz_check_err(err, sizeof err);
    }
    cfg_free(&cfg);
    for (size_t i = 0; i < n; i++)
        unsetenv(names[i]);
    return 0;
}
