/*
 * test.wait: an in-process handler (ABI version 2) for the tests only, never installed. It waits
 * params.seconds (default 1) through call->wait(), so a cancel, its timeout or a shutdown ends
 * the wait at once, and completes with what it saw:
 *   {"waited": true|false, "stop": <stop_requested() at the end>, "execution_id": N,
 *    "attempt": N, "timeout_s": N, "deadline": true|false}
 * With "ignore_stop": true it sleeps the whole time instead and never looks, like a handler
 * that does not cooperate. With "fail": N it returns N (a failed execution). With
 * "child_exit": N it first forks a process that exits with N after 100 ms, and after the wait
 * waits for it on its own thread, adding "child": its exit status, or -1 when another thread
 * reaped it (as a worker's reaper must not).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "warren/handler.h"

/* The text after "key": in params (no JSON library: the tests send simple objects). */
static const char *value_of(const char *params, const char *key)
{
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(params, quoted);
    if (!at)
        return NULL;
    at += strlen(quoted);
    while (*at == ' ' || *at == ':')
        at++;
    return at;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int wait_run(const warren_handler_call_t *call, warren_handler_output_t *out)
{
    const char *v = value_of(call->params_json, "seconds");
    int64_t ms = (int64_t)((v ? strtod(v, NULL) : 1.0) * 1000);
    v = value_of(call->params_json, "ignore_stop");
    int ignore = v && !strncmp(v, "true", 4);
    v = value_of(call->params_json, "fail");
    int code = v ? atoi(v) : 0;
    v = value_of(call->params_json, "child_exit");
    pid_t child = -1;
    if (v) {
        int child_code = atoi(v);
        child = fork();
        if (child == 0) {
            sleep_ms(100);
            _exit(child_code);
        }
    }
    int stop;
    if (ignore) {
        sleep_ms(ms);
        stop = call->stop_requested(call);
    } else {
        stop = call->wait(call, ms);
    }
    char child_field[32] = "";
    if (child > 0) {
        int status = 0;
        pid_t got;
        while ((got = waitpid(child, &status, 0)) < 0 && errno == EINTR)
            ;
        snprintf(child_field, sizeof child_field, ", \"child\": %d",
                 got == child && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    char *result = malloc(256);
    if (!result)
        return 1;
    snprintf(result, 256,
             "{\"waited\": %s, \"stop\": %d, \"execution_id\": %lld, \"attempt\": %d, "
             "\"timeout_s\": %d, \"deadline\": %s%s}",
             stop == WARREN_HANDLER_GO_ON || ignore ? "true" : "false", stop,
             (long long)call->execution_id, call->attempt, call->timeout_s,
             call->deadline_ms > 0 ? "true" : "false", child_field);
    out->result_json = result;
    if (code)
        snprintf(out->error, sizeof out->error, "test.wait: failing with %d as asked", code);
    return code;
}

const warren_handler_v2_t warren_handler_v2 = {
    .abi_version = WARREN_HANDLER_ABI_V2,
    .action_ref = "test.wait",
    .run = wait_run,
};
