/*
 * The operator commands over the executor's HTTP API: with WARREN_API_URL set (and
 * WARREN_API_KEY for a key), submit, get, list, workers and cancel need no database
 * credentials. One blocking request at a time through libevent's HTTP client. The --json
 * documents are the API's, which are the database path's (warren/queries.h).
 */
#ifndef WARREN_CLI_API_H
#define WARREN_CLI_API_H

#include <json-c/json.h>
#include "warren/common.h"

/* WARREN_API_URL, or NULL when the commands go to the database. */
const char *cli_api_url(void);

/*
 * One request ("GET", "POST" or "PATCH"; body NULL for none) to path below the API URL. Returns the
 * HTTP status with the body in *out (malloc'd, NUL-terminated; the caller frees it), or -1
 * after printing "warren CMD: ..." when there was no answer.
 */
int cli_api_request(const char *cmd, const char *method, const char *path, const char *body,
                    char **out);
/* Print the API's error answer {"error", "detail"} as "warren CMD: detail (HTTP code)". */
void cli_api_report(const char *cmd, int code, const char *body);
/* Parse an answer; NULL (reported) when it is not JSON. The caller puts it. */
json_object *cli_api_json(const char *cmd, const char *body);

/* The operator's name for cancelled_by/submitted_by on the database path: "cli:<user>". */
void cli_operator(char *buf, size_t len);
/* The document of one execution without "events" and "dead_letters": what submit --wait
 * --json prints, either way. Returns malloc'd text, NULL when doc is not a JSON object. */
char *cli_execution_row(const char *doc);

/* The commands over the API (argument parsing is the commands' own). */
int cli_api_submit(json_object *req, bool json, bool wait, int64_t wait_timeout_s);
int cli_api_get(const char *id, bool json);
int cli_api_list(const char *status, const char *limit, bool json);
int cli_api_workers(bool json);
int cli_api_cancel(const char *id, bool json);
/* POST /api/v1/executions/ID/retry; the same exit codes as `warren retry`. */
int cli_api_retry(const char *id, bool json);

#endif
