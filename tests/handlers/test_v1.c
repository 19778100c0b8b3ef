/*
 * test.v1: an in-process handler of ABI version 1, for the tests only (never installed): version
 * 1 modules still load and run inline, and their sources still build against the installed
 * header. Completes with {"abi": 1, "params": <its params>}.
 */
#include <stdio.h>
#include <stdlib.h>
#include "warren/handler.h"

static int v1_run(const char *params, size_t len, warren_handler_output_t *out)
{
    size_t size = len + 32;
    out->result_json = malloc(size); /* the worker frees it */
    if (!out->result_json) {
        snprintf(out->error, sizeof out->error, "test.v1: out of memory");
        return 1;
    }
    snprintf(out->result_json, size, "{\"abi\": 1, \"params\": %s}", params);
    return 0;
}

const warren_handler_t warren_handler_v1 = {
    .abi_version = WARREN_HANDLER_ABI,
    .action_ref = "test.v1",
    .run = v1_run,
};
