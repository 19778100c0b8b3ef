/* Splits SQL text into statements the way the server's lexer sees them (quotes, comments, $$). */
#include <string.h>
#include "db/sql_split.h"

static bool is_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c >= 0x80;
}

static bool is_tag_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Past a quoted string or identifier opening at i; doubled quotes stay inside. */
static size_t skip_quoted(const char *s, size_t n, size_t i, char q, bool backslash_escapes)
{
    for (i++; i < n; i++) {
        if (backslash_escapes && s[i] == '\\') {
            i++;
        } else if (s[i] == q) {
            if (i + 1 < n && s[i + 1] == q)
                i++;
            else
                return i + 1;
        }
    }
    return n;
}

/* Past a block comment opening at i; PostgreSQL nests them. */
static size_t skip_block_comment(const char *s, size_t n, size_t i)
{
    int depth = 0;
    while (i < n) {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            depth++;
            i += 2;
        } else if (s[i] == '*' && i + 1 < n && s[i + 1] == '/') {
            i += 2;
            if (--depth == 0)
                return i;
        } else {
            i++;
        }
    }
    return n;
}

static size_t skip_line_comment(const char *s, size_t n, size_t i)
{
    const char *nl = memchr(s + i, '\n', n - i);
    return nl ? (size_t)(nl - s) : n;
}

/* Length of a "$tag$" opener at i, 0 when the '$' starts something else ($1, $ alone). */
static size_t dollar_tag_len(const char *s, size_t n, size_t i)
{
    size_t j = i + 1;
    if (j < n && is_tag_start((unsigned char)s[j]))
        while (j < n && s[j] != '$' && is_word_char((unsigned char)s[j]))
            j++;
    return (j < n && s[j] == '$') ? j - i + 1 : 0;
}

static size_t skip_dollar_quoted(const char *s, size_t n, size_t i, size_t taglen)
{
    const char *end = memmem(s + i + taglen, n - i - taglen, s + i, taglen);
    return end ? (size_t)(end - s) + taglen : n;
}

/* Past the lexical unit starting at i (never less than one byte). */
static size_t skip_token(const char *s, size_t n, size_t i)
{
    char c = s[i];
    if (c == '\'')
        return skip_quoted(s, n, i, '\'', false);
    if (c == '"')
        return skip_quoted(s, n, i, '"', false);
    if (c == '-' && i + 1 < n && s[i + 1] == '-')
        return skip_line_comment(s, n, i);
    if (c == '/' && i + 1 < n && s[i + 1] == '*')
        return skip_block_comment(s, n, i);
    if (c == '$') {
        size_t taglen = dollar_tag_len(s, n, i);
        return taglen ? skip_dollar_quoted(s, n, i, taglen) : i + 1;
    }
    if (is_word_char((unsigned char)c)) {
        /* A whole word, so a '$' inside an identifier never opens a dollar quote. */
        size_t j = i;
        while (j < n && is_word_char((unsigned char)s[j]))
            j++;
        if (j - i == 1 && (c == 'E' || c == 'e') && j < n && s[j] == '\'')
            return skip_quoted(s, n, j, '\'', true);
        return j;
    }
    return i + 1;
}

static size_t skip_blanks_and_comments(const char *s, size_t n, size_t i)
{
    while (i < n) {
        if (is_blank(s[i]))
            i++;
        else if (s[i] == '-' && i + 1 < n && s[i + 1] == '-')
            i = skip_line_comment(s, n, i);
        else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*')
            i = skip_block_comment(s, n, i);
        else
            break;
    }
    return i;
}

static int count_lines(const char *s, size_t from, size_t to)
{
    int lines = 0;
    for (size_t i = from; i < to; i++)
        lines += s[i] == '\n';
    return lines;
}

bool sql_next_statement(const char *sql, size_t n, size_t *pos, int *line, sql_stmt_t *st)
{
    size_t i = *pos;
    /* Empty statements (";;") are skipped like blanks. */
    for (;;) {
        i = skip_blanks_and_comments(sql, n, i);
        if (i < n && sql[i] == ';')
            i++;
        else
            break;
    }
    *line += count_lines(sql, *pos, i);
    *pos = i;
    if (i >= n)
        return false;
    st->start = i;
    st->line = *line;
    while (i < n && sql[i] != ';')
        i = skip_token(sql, n, i);
    st->len = i - st->start;
    if (i < n)
        i++; /* the ';' */
    *line += count_lines(sql, *pos, i);
    *pos = i;
    return true;
}

size_t sql_char_to_byte(const char *s, size_t len, int charpos)
{
    int chars = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && ++chars == charpos)
            return i;
    return len;
}
