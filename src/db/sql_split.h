/* Splitting a migration file into statements, so a failure can name the statement and line. */
#ifndef WARREN_DB_SQL_SPLIT_H
#define WARREN_DB_SQL_SPLIT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sql_stmt {
    size_t start; /* byte offset of the first token (leading blanks and comments skipped) */
    size_t len;   /* bytes up to, not including, the terminating ';' */
    int line;     /* 1-based line of start */
} sql_stmt_t;

/*
 * Find the next statement in sql[0..n) at or after *pos and advance *pos past it.
 * Knows quotes ('', E'', ""), comments (--, nested block comments) and dollar quotes
 * ($$, $tag$), so semicolons inside them do not split. An unterminated construct runs to
 * the end of the text (the server then reports it). Returns false when only blanks and
 * comments remain. *line tracks the line of *pos; start it at 1.
 */
bool sql_next_statement(const char *sql, size_t n, size_t *pos, int *line, sql_stmt_t *st);

/* Byte offset in s[0..len) of the 1-based character position charpos (UTF-8 aware), as
 * PostgreSQL reports error positions in characters. Clamped to len. */
size_t sql_char_to_byte(const char *s, size_t len, int charpos);

#endif
