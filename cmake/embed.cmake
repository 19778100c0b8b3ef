# A file as a C array, for what the binary serves as it was built (docs/openapi.json at
# GET /api/v1/openapi.json): cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -P cmake/embed.cmake
# writes `const unsigned char SYMBOL[]` (the bytes and a NUL, so it is also a C string) and
# `const size_t SYMBOL_len` (the bytes without the NUL). CMakeLists.txt runs it at build time,
# again whenever IN changes.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR len "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
  "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp "/* Generated from ${IN} by cmake/embed.cmake: do not edit. */
#include <stddef.h>
extern const unsigned char ${NAME}[];
extern const size_t ${NAME}_len;
const unsigned char ${NAME}[] = {
${bytes}0x00};
const size_t ${NAME}_len = ${len};
")
file(RENAME ${OUT}.tmp ${OUT})
