/*
 * UTF-8 for text that crosses a trust boundary (message bodies, handler output, broker and
 * database text): strict validation, cleaning, and cutting to a length on a character
 * boundary. Every place that cleans or shortens text uses these, so no text is ever cut in
 * the middle of a character.
 */
#ifndef WARREN_UTF8_H
#define WARREN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * True when s[0..len) is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). On false, *bad_offset (if not NULL) gets the offset of the
 * first byte of the offending sequence. NUL bytes are valid UTF-8; callers that treat
 * text as C strings check for them separately (utf8_is_text).
 */
bool utf8_valid(const void *s, size_t len, size_t *bad_offset);
/* Well-formed and free of NUL: what a PostgreSQL text value or a C string can hold as is. */
bool utf8_is_text(const void *s, size_t len);
/* Length (1 to 4) of the well-formed character that starts s[0..n), 0 when none does. */
size_t utf8_char_len(const void *s, size_t n);

/*
 * Copy of s[0..len) as valid UTF-8 text: every byte that does not belong to a well-formed
 * character, and every NUL, becomes U+FFFD. NUL-terminated, malloc'd, the caller frees it;
 * NULL on OOM.
 */
char *utf8_clean(const void *s, size_t len);

/*
 * Cutting. utf8_cut: the length of the longest prefix of s[0..len) that has at most max bytes
 * and does not end inside a character (len itself when len <= max).
 */
size_t utf8_cut(const void *s, size_t len, size_t max);
/* For "%.*s": the precision that prints at most max bytes of the C string s, whole characters
 * only. */
int utf8_prec(const char *s, size_t max);
/* s[0..len) was cut from longer text: the number of bytes at its end that start a character
 * whose remaining bytes were cut off (0 to 3). */
size_t utf8_partial_tail(const void *s, size_t len);
/* Likewise for text cut at its start: the continuation bytes (0 to 3) that open s[0..len) and
 * belong to a character that began before it. */
size_t utf8_partial_head(const void *s, size_t len);

#endif
