/*
 * example.upper: an in-process handler (handler ABI version 2, see include/warren/handler.h)
 * that completes with its params, every ASCII letter inside JSON strings upper-cased:
 * {"text": "abc"} -> {"TEXT": "ABC"}. It shows the ABI and stays free of any library: a small
 * scan that leaves escapes, numbers and the literals true/false/null as they are, so valid JSON in
 * gives valid JSON out. It runs on a thread of its own and, on large params, looks now and then
 * whether the worker wants it to stop (a cancel, its timeout, a shutdown).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include "warren/handler.h"

/* Bytes scanned between two looks at stop_requested(): cheap, but not free. */
#define STOP_CHECK_BYTES 65536

static int upper_run(const warren_handler_call_t *call, warren_handler_output_t *out)
{
    const char *params = call->params_json;
    size_t len = call->params_len;
    char *result = malloc(len + 1); /* the worker frees it */
    if (!result) {
        snprintf(out->error, sizeof out->error, "example.upper: out of memory");
        return 1;
    }
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        if (i % STOP_CHECK_BYTES == 0 && call->stop_requested(call) != WARREN_HANDLER_GO_ON) {
            free(result);
            snprintf(out->error, sizeof out->error, "example.upper: stopped at byte %zu", i);
            return 1; /* the execution ends as cancelled, timed out or terminated anyway */
        }
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

/* The descriptor the worker looks up by name (WARREN_HANDLER_SYMBOL_V2) after dlopen(). */
const warren_handler_v2_t warren_handler_v2 = {
    .abi_version = WARREN_HANDLER_ABI_V2,
    .action_ref = "example.upper",
    .run = upper_run,
};
