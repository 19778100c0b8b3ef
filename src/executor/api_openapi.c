/*
 * GET /api/v1/openapi.json: docs/openapi.json, the contract of the API, embedded in the binary
 * at build time (cmake/embed.cmake), so a running executor describes the API it serves whatever
 * is installed beside it. Open like /livez: a client generator has no key yet.
 */
#include "executor/api.h"

void api_openapi(http_req_t *r, void *arg)
{
    (void)arg;
    http_reply_json(r, 200, (const char *)api_openapi_json);
}
