/* RFC 3339 date-times: the one parser and formatter (rules in warren/timestamp.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "warren/timestamp.h"

#define US_PER_S INT64_C(1000000)
#define S_PER_DAY 86400
/* Days from 0001-01-01 to 1970-01-01 in the proleptic Gregorian calendar. */
#define DAYS_TO_EPOCH 719162
/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z. */
#define MIN_US (TS_MIN_S * US_PER_S)
#define MAX_US ((TS_MAX_S + 1) * US_PER_S - 1)
_Static_assert(TS_MIN_S == -(int64_t)DAYS_TO_EPOCH * S_PER_DAY, "TS_MIN_S is 0001-01-01");

/* Exactly n ASCII digits at s (never a locale's idea of a digit). */
static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static bool leap_year(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return days[m - 1] + (m == 2 && leap_year(y));
}

/* Days from 1970-01-01 to y-m-d (y >= 1). */
static int64_t days_since_epoch(int y, int m, int d)
{
    static const int before_month[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int64_t past = y - 1; /* whole years before y */
    int64_t days = past * 365 + past / 4 - past / 100 + past / 400;
    days += before_month[m - 1] + (m > 2 && leap_year(y)) + d - 1;
    return days - DAYS_TO_EPOCH;
}

/* "." and 1 to 9 digits, as microseconds; p moves past them. Absent: 0. */
static bool fraction(const char **p, int64_t *us)
{
    *us = 0;
    if (**p != '.')
        return true;
    size_t n = strspn(*p + 1, "0123456789");
    if (n < 1 || n > 9)
        return false;
    for (size_t i = 0; i < 6; i++)
        *us = *us * 10 + (i < n ? (*p)[1 + i] - '0' : 0);
    *p += 1 + n;
    return true;
}

/* "Z", "z" or "+hh:mm" / "-hh:mm" ending the text, as minutes east of UTC. */
static bool offset(const char *p, int *minutes)
{
    int h, m;
    if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') {
        *minutes = 0;
        return true;
    }
    if ((p[0] != '+' && p[0] != '-') || !digits(p + 1, 2, &h) || p[3] != ':' ||
        !digits(p + 4, 2, &m) || p[6] != '\0' || h > 23 || m > 59)
        return false;
    *minutes = (p[0] == '-' ? -1 : 1) * (h * 60 + m);
    return true;
}

int ts_parse(const char *s, int64_t *us)
{
    int y, mo, d, h, mi, sec, off;
    int64_t frac;
    /* Each test stops at the first byte that differs, so a short text is never read past. */
    if (!s || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) ||
        s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
        return -1;
    const char *p = s + 19;
    if (!fraction(&p, &frac) || !offset(p, &off))
        return -1;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 60)
        return -1;
    int64_t t = days_since_epoch(y, mo, d) * S_PER_DAY + h * 3600 + mi * 60 +
                (sec == 60 ? 59 : sec) - off * 60;
    if (sec == 60) {
        int64_t second_of_day = ((t % S_PER_DAY) + S_PER_DAY) % S_PER_DAY;
        if (second_of_day != S_PER_DAY - 1) /* leap seconds end a UTC day */
            return -1;
        t++;
    }
    int64_t v = t * US_PER_S + frac;
    if (v < MIN_US || v > MAX_US)
        return -1;
    *us = v;
    return 0;
}

/* UTC with `places` (3 or 6) fractional digits. */
static void format(int64_t us, int places, char *buf, size_t len)
{
    int64_t s = us / US_PER_S, frac = us % US_PER_S;
    if (frac < 0) { /* floor, for times before 1970 */
        s--;
        frac += US_PER_S;
    }
    time_t t = (time_t)s;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) { /* only for times no parse produces */
        if (len > 0)
            buf[0] = '\0';
        return;
    }
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%0*lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, places,
             (long long)(places == 3 ? frac / 1000 : frac));
}

void ts_format(int64_t us, char *buf, size_t len)
{
    format(us, 3, buf, len);
}

void ts_format_us(int64_t us, char *buf, size_t len)
{
    format(us, 6, buf, len);
}

void ts_now(char *buf, size_t len)
{
    ts_format(now_wall_ms() * 1000, buf, len);
}
