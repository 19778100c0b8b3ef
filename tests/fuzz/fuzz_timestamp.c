/*
 * RFC 3339 date-times (warren/timestamp.h): any text through ts_parse, and any 64-bit instant
 * through the formatters. Invariants: what parses lies in years 0001..9999 and formats back to
 * text that parses to the same instant (to the microsecond, or to the millisecond floor for
 * ts_format); formatting never overruns its buffer, whatever the instant.
 */
#include "fuzz.h"
#include "warren/timestamp.h"

#define MIN_US (-INT64_C(62135596800) * 1000000)     /* 0001-01-01T00:00:00Z */
#define MAX_US (INT64_C(253402300800) * 1000000 - 1) /* 9999-12-31T23:59:59.999999Z */

static int64_t floor_ms(int64_t us)
{
    int64_t r = us % 1000;
    return us - (r < 0 ? r + 1000 : r);
}

static void check_instant(int64_t us)
{
    char buf[TS_TEXT_MAX];
    int64_t back;
    ts_format_us(us, buf, sizeof buf);
    FUZZ_CHECK(strlen(buf) < sizeof buf);
    if (us < MIN_US || us > MAX_US)
        return; /* formatted as best it can, or empty: no parse produces such an instant */
    if (ts_parse(buf, &back) != 0 || back != us) {
        fprintf(stderr, "%lld formats as '%s', which does not read back\n", (long long)us, buf);
        abort();
    }
    ts_format(us, buf, sizeof buf);
    FUZZ_CHECK(ts_parse(buf, &back) == 0 && back == floor_ms(us));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    int64_t us;
    if (ts_parse(text, &us) == 0) {
        FUZZ_CHECK(us >= MIN_US && us <= MAX_US);
        FUZZ_CHECK(strlen(text) < TS_TEXT_MAX); /* what the envelope's buffer holds */
        check_instant(us);
    }
    free(text);
    if (size >= 8) {
        int64_t raw;
        memcpy(&raw, data, 8);
        check_instant(raw);
        char small[12];
        ts_format(raw, small, (size_t)(data[size - 1] % sizeof small));
    }
    return 0;
}
