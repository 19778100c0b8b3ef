/*
 * Per-action default timeouts from the configuration key worker.action_timeouts:
 * "action=seconds,action=seconds" (e.g. "core.sleep=60,reports.build=3600"). A submission's own
 * timeout wins; an action not listed gets worker.default_timeout_s. Pure string functions.
 */
#ifndef WARREN_ACTION_TIMEOUTS_H
#define WARREN_ACTION_TIMEOUTS_H

#include "warren/common.h"

#define ACTION_TIMEOUT_MAX_S (7 * 86400)

/* Validate a spec; on error returns -1 and says which entry is wrong in why. "" is valid. */
int action_timeouts_check(const char *spec, char *why, size_t whylen) WARN_UNUSED;
/* The seconds listed for action in a valid spec, or 0 when it is not listed. */
int action_timeouts_lookup(const char *spec, const char *action);
/* fn for every valid entry of spec in order: the action (len bytes, not NUL-terminated) and its
 * seconds. The staleness keys use the same form (staleness.*_by_action). */
void action_timeouts_each(const char *spec,
                          void (*fn)(const char *action, size_t len, int seconds, void *arg),
                          void *arg);

#endif
