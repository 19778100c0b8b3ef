#!/usr/bin/env bash
# The API's answers match docs/openapi.json: GET /api/v1/openapi.json answers the document the
# binary was built with, without a key even when reads need one (and refuses a query: 400), and
# every answer the API tests received (tests/lib/api.sh's `call` keeps them in
# build/api-answers/; ctest runs the api_* tests first, as this test's fixture) validates against
# the schema of its operation and status (tests/openapi/contract.mjs): a field the C sends that
# the document lacks fails, a field the document requires that an answer lacks fails, and so do
# a status or route the document does not name. Captures older than the binary are not read.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/api.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/openapi.sh"
require_stack

openapi_tools || fail "the OpenAPI tools could not be installed"
doc=$WARREN_SOURCE_DIR/docs/openapi.json

isolate_topology
api_start ex
log "GET /api/v1/openapi.json: the document, no key needed (api.auth_reads is on)"
expect 200 GET /api/v1/openapi.json '' -
assert_eq "$(jq -cS . "$doc" | sha256sum)" "$(jq -cS . <<<"$CALL_BODY" | sha256sum)" \
    "the served document is docs/openapi.json (rebuild after changing it)"
expect 400 GET '/api/v1/openapi.json?x=1' '' -

[ -n "$API_CAPTURE_FILE" ] || fail "WARREN_API_CAPTURE is empty: no answers are kept"
captures=$(find "$(dirname "$API_CAPTURE_FILE")" -name '*.tsv' -newer "$WARREN_BIN" | sort)
log "validating the answers of $(wc -l <<<"$captures") tests"
# shellcheck disable=SC2086 # the file names, one per line, have no spaces (TEST_NAME.tsv)
out=$(node "$OPENAPI_TOOLS/contract.mjs" "$doc" $captures 2>&1) || fail "$out"
log "$out"
pass
