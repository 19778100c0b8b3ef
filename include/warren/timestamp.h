/*
 * RFC 3339 date-times on the wire: one parser for every reader (the envelope's timestamp, the
 * started_at of results and heartbeats) and one formatter for every writer (envelopes, reports,
 * log lines, dead-letter results and headers).
 *
 * Accepted: YYYY-MM-DD "T" hh:mm:ss [ "." fraction ] ( "Z" | "+hh:mm" | "-hh:mm" ), with 'T'
 * and 'Z' in either case. The date must exist (no 30 February) in years 0001 to 9999 once
 * converted to UTC; the fraction has 1 to 9 digits and is kept to the microsecond (further
 * digits are truncated, never rounded into the next second). Second 60 is accepted only as a
 * leap second, 23:59:60 UTC, and counts as 00:00:00 of the next day, as POSIX clocks and
 * PostgreSQL count it. Refused: a space instead of 'T' (RFC 3339 lets applications allow it;
 * no peer of warren writes it, and one spelling is enough), a missing offset, anything after
 * the offset.
 */
#ifndef WARREN_TIMESTAMP_H
#define WARREN_TIMESTAMP_H

#include "warren/common.h"

/* Room for the longest accepted text, and for what the formatters write, with the NUL. */
#define TS_TEXT_MAX 40

/* The seconds since the epoch of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the range of
 * ts_parse, and of an integer time (an AMQP timestamp) that may be formatted as microseconds. */
#define TS_MIN_S INT64_C(-62135596800)
#define TS_MAX_S INT64_C(253402300799)

/* text as microseconds since the Unix epoch (UTC) in *us; -1 when it is not an accepted
 * date-time. */
int ts_parse(const char *text, int64_t *us) WARN_UNUSED;
/* us as "YYYY-MM-DDThh:mm:ss.mmmZ": UTC with milliseconds, what warren sends. */
void ts_format(int64_t us, char *buf, size_t len);
/* us as "YYYY-MM-DDThh:mm:ss.uuuuuuZ": every microsecond, so PostgreSQL reads exactly us. */
void ts_format_us(int64_t us, char *buf, size_t len);
/* The wall clock now, as ts_format writes it. */
void ts_now(char *buf, size_t len);

#endif
