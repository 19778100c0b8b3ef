/* Parsing, statuses (from warren/exec_status.h), durations and tables shared by the operator
 * commands. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "cli/cli_fmt.h"
#include "warren/exec_status.h"

int cli_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    /* strtoll alone accepts " 12", "+12" and "12abc"; operators' typos must not pass. */
    if (!s || !*s || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static bool only_space(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

/* Offset of a single quote outside double-quoted strings, or -1. json-c accepts 'text' as a
 * string even in strict mode; PostgreSQL (and the JSON standard) do not. */
static long single_quote_at(const char *s)
{
    bool in_string = false;
    for (const char *p = s; *p; p++) {
        if (in_string && *p == '\\' && p[1])
            p++;
        else if (*p == '"')
            in_string = !in_string;
        else if (!in_string && *p == '\'')
            return p - s;
    }
    return -1;
}

int cli_json_object_check(const char *text, char *err, size_t errlen)
{
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    /* Including the terminating NUL tells the tokener the input ends there, so a bare
     * number at the end is complete rather than "continue". */
    size_t len = strlen(text);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len + 1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = -1;
    if (jerr != json_tokener_success)
        snprintf(err, errlen, "not valid JSON at offset %zu: %s", end,
                 jerr == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(jerr));
    else if (single_quote_at(text) >= 0)
        snprintf(err, errlen, "not valid JSON at offset %ld: strings take double quotes",
                 single_quote_at(text));
    else if (end < len && !only_space(text + end))
        snprintf(err, errlen, "unexpected text after the JSON value at offset %zu", end);
    else if (!json_object_is_type(obj, json_type_object)) /* json-c's null is NULL */
        snprintf(err, errlen, "a JSON %s, not an object",
                 json_type_to_name(json_object_get_type(obj)));
    else
        rc = 0;
    json_object_put(obj);
    return rc;
}

bool cli_status_known(const char *status)
{
    exec_status_t s;
    return trans_status_parse(status, &s) == 0;
}

bool cli_status_terminal(const char *status)
{
    exec_status_t s;
    return trans_status_parse(status, &s) == 0 && trans_is_terminal(s);
}

/* "a, b, c" of every status, or of the final ones only. */
static void status_words(char *list, size_t len, bool final_only)
{
    size_t o = 0;
    list[0] = '\0';
    for (int i = 0; i < EXEC_STATUS_COUNT; i++)
        if (!final_only || trans_is_terminal((exec_status_t)i)) {
            int n = snprintf(list + o, len - o, "%s%s", o ? ", " : "",
                             trans_status_name((exec_status_t)i));
            if (n < 0 || (size_t)n >= len - o)
                break;
            o += (size_t)n;
        }
}

const char *cli_status_list(void)
{
    static char list[256];
    if (!list[0])
        status_words(list, sizeof list, false);
    return list;
}

const char *cli_status_final_list(void)
{
    static char list[256];
    if (!list[0])
        status_words(list, sizeof list, true);
    return list;
}

void cli_fmt_duration(double s, char *buf, size_t len)
{
    if (!(s >= 0)) { /* also NaN */
        snprintf(buf, len, "-");
        return;
    }
    int64_t whole = (int64_t)s;
    if (s < 1)
        snprintf(buf, len, "%dms", (int)(s * 1000));
    else if (s < 60)
        snprintf(buf, len, "%.1fs", (double)(int64_t)(s * 10) / 10);
    else if (s < 3600)
        snprintf(buf, len, "%" PRId64 "m%02ds", whole / 60, (int)(whole % 60));
    else if (s < 86400)
        snprintf(buf, len, "%" PRId64 "h%02dm", whole / 3600, (int)(whole % 3600 / 60));
    else
        snprintf(buf, len, "%" PRId64 "d%02dh", whole / 86400, (int)(whole % 86400 / 3600));
}

static int table_put_row(cli_table_t *t, const char *const *row)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
        if (!cells)
            return -1;
        t->cells = cells;
        t->cap = cap;
    }
    char **dst = t->cells + t->nrows * t->ncols;
    for (size_t c = 0; c < t->ncols; c++) {
        dst[c] = strdup(row[c] ? row[c] : "-");
        if (!dst[c]) {
            while (c-- > 0)
                free(dst[c]);
            return -1;
        }
    }
    t->nrows++;
    return 0;
}

int cli_table_init(cli_table_t *t, size_t ncols, const char *const *headers)
{
    *t = (cli_table_t){.ncols = ncols};
    return table_put_row(t, headers);
}

int cli_table_add(cli_table_t *t, const char *const *row)
{
    return table_put_row(t, row);
}

/* Terminal columns, not bytes: UTF-8 continuation bytes take no room. */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

void cli_table_print(const cli_table_t *t, FILE *out)
{
    size_t width[t->ncols];
    memset(width, 0, sizeof width);
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t w = text_width(t->cells[r * t->ncols + c]);
            width[c] = w > width[c] ? w : width[c];
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            bool last = c + 1 == t->ncols;
            fputs(cell, out);
            for (size_t pad = text_width(cell); !last && pad < width[c] + 2; pad++)
                fputc(' ', out);
        }
        fputc('\n', out);
    }
}

void cli_table_free(cli_table_t *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    *t = (cli_table_t){0};
}
