/*
 * What the operator commands (submit, get, list, workers) share: number and JSON argument
 * parsing, the execution status set, human durations and plain-text tables. Pure functions,
 * so tests/unit/test_cli_fmt.c covers them without a database.
 */
#ifndef WARREN_CLI_FMT_H
#define WARREN_CLI_FMT_H

#include <stdio.h>
#include "warren/common.h"

/* Parse a whole decimal integer in [min, max] (no sign for min >= 0, no spaces, no suffix). */
int cli_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out) WARN_UNUSED;

/* Check that text is exactly one JSON object (strict: no trailing text, no comments).
 * The reason goes into err ("not valid JSON at offset 7: ...", "a JSON array, not an object"). */
int cli_json_object_check(const char *text, char *err, size_t errlen) WARN_UNUSED;

/* Execution statuses, by their stored words (warren/exec_status.h). */
bool cli_status_known(const char *status);
bool cli_status_terminal(const char *status);
/* "requested, scheduling, ..." for usage messages; the final ones only ("completed, ..."). */
const char *cli_status_list(void);
const char *cli_status_final_list(void);

/* A duration for people: "850ms", "12.3s", "4m05s", "2h07m", "3d04h". Negative gives "-". */
void cli_fmt_duration(double seconds, char *buf, size_t len);

/*
 * A table printed with columns padded to their widest cell (the last column unpadded).
 * cli_table_init copies nothing; cli_table_add copies the cells (NULL prints as "-").
 * The caller frees the cells with cli_table_free().
 */
typedef struct cli_table {
    size_t ncols;
    size_t nrows; /* the header row included */
    size_t cap;
    char **cells; /* nrows * ncols, row-major */
} cli_table_t;

int cli_table_init(cli_table_t *t, size_t ncols, const char *const *headers) WARN_UNUSED;
int cli_table_add(cli_table_t *t, const char *const *row) WARN_UNUSED;
void cli_table_print(const cli_table_t *t, FILE *out);
void cli_table_free(cli_table_t *t);

#endif
