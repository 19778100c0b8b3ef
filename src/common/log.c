/* Leveled one-line logging to stderr: JSON when not a terminal, text otherwise. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "warren/common.h"
#include "warren/log.h"
#include "warren/timestamp.h"

static log_level_t min_level = LOG_INFO;
static bool as_json = false;
static const char *component = "warren";
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_setup(log_level_t level, log_format_t format)
{
    min_level = level;
    as_json = format == LOG_FORMAT_JSON || (format == LOG_FORMAT_AUTO && !isatty(STDERR_FILENO));
}

void log_set_component(const char *name)
{
    component = name;
}

int log_level_parse(const char *s, log_level_t *out)
{
    for (int i = 0; i <= LOG_ERROR; i++)
        if (!strcmp(s, level_names[i])) {
            *out = (log_level_t)i;
            return 0;
        }
    return -1;
}

static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void emit(log_level_t level, const char *msg, va_list *fields)
{
    char ts[TS_TEXT_MAX];
    ts_now(ts, sizeof ts);

    pthread_mutex_lock(&log_lock);
    if (as_json) {
        fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", ts, level_names[level]);
        put_json_string(stderr, component);
        fputs(",\"msg\":", stderr);
        put_json_string(stderr, msg);
    } else {
        fprintf(stderr, "%s %-5s %s: %s", ts, level_names[level], component, msg);
    }
    if (fields) {
        const char *key;
        while ((key = va_arg(*fields, const char *)) != NULL) {
            const char *val = va_arg(*fields, const char *);
            if (!val)
                val = "";
            if (as_json) {
                fputc(',', stderr);
                put_json_string(stderr, key);
                fputc(':', stderr);
                put_json_string(stderr, val);
            } else {
                fprintf(stderr, " %s=%s", key, val);
            }
        }
    }
    fputs(as_json ? "}\n" : "\n", stderr);
    fflush(stderr);
    pthread_mutex_unlock(&log_lock);
}

void log_kv(log_level_t level, const char *msg, ...)
{
    if (level < min_level)
        return;
    va_list ap;
    va_start(ap, msg);
    emit(level, msg, &ap);
    va_end(ap);
}

void log_msg(log_level_t level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    emit(level, buf, NULL);
}
