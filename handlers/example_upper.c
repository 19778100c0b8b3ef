/*
 * example.upper: an in-process handler (see include/warren/handler.h) that completes with its
 * params, every ASCII letter inside JSON strings upper-cased: {"text": "abc"} -> {"TEXT": "ABC"}.
 * It shows the ABI and stays free of any library: a small scan that leaves escapes, numbers
 * and the literals true/false/null as they are, so valid JSON in gives valid JSON out.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include "warren/handler.h"

static int upper_run(const char *params, size_t len, warren_handler_output_t *out)
{
    char *result = malloc(len + 1); /* the worker frees it */
    if (!result) {
        snprintf(out->error, sizeof out->error, "example.upper: out of memory");
        return 1;
    }
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = params[i];
        if (in_string && c == '\\' && i + 1 < len) {
            result[i] = c;
            result[i + 1] = params[i + 1]; /* the escaped character stays as it is */
            i++;
            continue;
        }
        if (c == '"')
            in_string = !in_string;
        result[i] = in_string ? (char)toupper((unsigned char)c) : c;
    }
    result[len] = '\0';
    out->result_json = result;
    return 0;
}

/* The descriptor the worker looks up by name after dlopen(). */
const warren_handler_t warren_handler_v1 = {
    .abi_version = WARREN_HANDLER_ABI,
    .action_ref = "example.upper",
    .run = upper_run,
};
