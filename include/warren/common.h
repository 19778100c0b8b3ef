/* Shared conventions: the error contract and small helpers every module uses. */
#ifndef WARREN_COMMON_H
#define WARREN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Functions return 0 on success, -1 on failure (detail in an out parameter or the log). */
#define WARN_UNUSED __attribute__((warn_unused_result))

/* Exit codes of the warren binary. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Error text buffers passed as out parameters are this size. */
#define ERRBUF_SIZE 512

/* Monotonic and wall clocks in milliseconds. */
int64_t now_mono_ms(void);
int64_t now_wall_ms(void);

#endif
