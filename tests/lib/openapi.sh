# The tools of docs/openapi.json's checks (tests/openapi/: @apidevtools/swagger-parser, ajv),
# for tests/build/openapi_lint.sh and tests/integration/api_contract.sh. Needs WARREN_SOURCE_DIR
# and WARREN_BUILD_DIR; standalone (no common.sh), as the build checks do not source it.
# shellcheck shell=bash

# openapi_tools: installs the npm packages of tests/openapi/package-lock.json into
# WARREN_BUILD_DIR/openapi-tools (again only when the lock file changed, so a run without the
# network works once they are there), copies the scripts beside them and sets OPENAPI_TOOLS.
# Returns 1 with the reason on stderr.
openapi_tools() {
    local src=$WARREN_SOURCE_DIR/tests/openapi
    OPENAPI_TOOLS=$WARREN_BUILD_DIR/openapi-tools
    { command -v node >/dev/null && command -v npm >/dev/null; } ||
        { echo "node and npm are needed: scripts/deps installs them" >&2; return 1; }
    mkdir -p "$OPENAPI_TOOLS"
    if ! cmp -s "$src/package-lock.json" "$OPENAPI_TOOLS/package-lock.json" ||
        [ ! -d "$OPENAPI_TOOLS/node_modules" ]; then
        cp "$src/package.json" "$src/package-lock.json" "$OPENAPI_TOOLS/"
        if ! (cd "$OPENAPI_TOOLS" && npm ci --no-audit --no-fund --loglevel=error \
            >"$OPENAPI_TOOLS/npm.log" 2>&1); then
            rm -f "$OPENAPI_TOOLS/package-lock.json"
            echo "npm ci: $(tail -n 20 "$OPENAPI_TOOLS/npm.log")" >&2
            return 1
        fi
    fi
    cp "$src"/*.mjs "$OPENAPI_TOOLS/"
}
