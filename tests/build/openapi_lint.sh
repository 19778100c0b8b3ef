#!/usr/bin/env bash
# docs/openapi.json is valid OpenAPI 3.1 for an outside validator (@apidevtools/swagger-parser,
# pinned by tests/openapi/package-lock.json), names exactly the /api/v1 routes of
# src/executor/api.c with an operationId and an x-scope each, closes every answer object
# (additionalProperties: false) and has examples that match their schemas
# (tests/openapi/lint.mjs). The npm packages are installed under the build directory.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/openapi.sh"

openapi_tools || fail "the OpenAPI tools could not be installed"
out=$(node "$OPENAPI_TOOLS/lint.mjs" "$WARREN_SOURCE_DIR/docs/openapi.json" \
    "$WARREN_SOURCE_DIR/src/executor/api.c" 2>&1) || fail "$out"
log "$out"
pass
