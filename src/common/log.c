/* Leveled one-line logging to stderr: JSON when not a terminal, text otherwise. Every byte
 * that could end a line or steer a terminal is escaped in both formats, so text from outside
 * (broker errors, handler output, names) cannot forge a log line. */
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

/* The short escape of a control character ("n" for a newline), or NULL. */
static const char *short_escape(unsigned char c)
{
    switch (c) {
    case '\n': return "n";
    case '\r': return "r";
    case '\t': return "t";
    case '\\': return "\\";
    case '"': return "\"";
    default: return NULL;
    }
}

static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *e = short_escape(*p);
        if (e)
            fprintf(f, "\\%s", e);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Text format: control characters as \n, \r, \t or \xNN and backslashes doubled. A field value
 * is quoted when it is empty or holds a space, '=' or '"', so it cannot pose as another field. */
static void put_text(FILE *f, const char *s, bool value)
{
    bool quote = value && (!*s || strpbrk(s, " =\"") != NULL);
    if (quote)
        fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *e = short_escape(*p);
        if (e && (*p != '"' || quote))
            fprintf(f, "\\%s", e);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    if (quote)
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
        fprintf(stderr, "%s %-5s ", ts, level_names[level]);
        put_text(stderr, component, false);
        fputs(": ", stderr);
        put_text(stderr, msg, false);
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
                fputc(' ', stderr);
                put_text(stderr, key, false);
                fputc('=', stderr);
                put_text(stderr, val, true);
            }
        }
    }
    fputs(as_json ? "}\n" : "\n", stderr);
    (void)fflush(stderr);
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
