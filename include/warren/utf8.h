/* Strict UTF-8 validation for text that crosses a trust boundary (message bodies, handler output). */
#ifndef WARREN_UTF8_H
#define WARREN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * True when s[0..len) is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). On false, *bad_offset (if not NULL) gets the offset of the
 * first byte of the offending sequence. NUL bytes are valid UTF-8; callers that treat
 * text as C strings check for them separately.
 */
bool utf8_valid(const void *s, size_t len, size_t *bad_offset);

#endif
