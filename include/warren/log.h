/* Leveled one-line logging: JSON when stderr is not a terminal, text otherwise. */
#ifndef WARREN_LOG_H
#define WARREN_LOG_H

#include <stdarg.h>
#include "warren/common.h"

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level_t;
typedef enum { LOG_FORMAT_AUTO = 0, LOG_FORMAT_JSON, LOG_FORMAT_TEXT } log_format_t;

void log_setup(log_level_t level, log_format_t format);
/* Name of the component written on every line ("executor", "worker", "cli"). */
void log_set_component(const char *component);
/* "debug", "info", "warn" or "error" into *out; -1 for anything else. */
int log_level_parse(const char *s, log_level_t *out) WARN_UNUSED;

/*
 * Log one line. Fields are key/value string pairs ended by NULL:
 *   log_kv(LOG_WARN, "dispatch failed", "execution_id", id, "worker", w, NULL);
 */
void log_kv(log_level_t level, const char *msg, ...) __attribute__((sentinel));
/* printf-style message with no extra fields. */
void log_msg(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
