#!/usr/bin/env bash
# k8s/ offline: the base and the example overlay render (tests/k8s/render.mjs, the kustomize
# subset k8s/ uses; identical to `kubectl kustomize` where kubectl is installed); every object
# validates against the Kubernetes OpenAPI schemas and the CRD schemas, and the invariants of
# tests/k8s/check.mjs hold (probes, environment names, selectors, grace periods, security); the
# alerting rules pass `promtool check rules`; the KEDA query runs on the real schema; the
# ConfigMap is conf/warren.conf. The npm packages are pinned by tests/k8s/package-lock.json and
# installed under the build directory.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

src=$WARREN_SOURCE_DIR
{ command -v node >/dev/null && command -v npm >/dev/null; } || fail "node and npm are needed: scripts/deps installs them"
command -v promtool >/dev/null || fail "promtool is needed: scripts/deps installs prometheus"
cmp -s "$src/conf/warren.conf" "$src/k8s/base/warren.conf" ||
    fail "k8s/base/warren.conf is not conf/warren.conf: cp conf/warren.conf k8s/base/warren.conf"

# The tools: reinstalled only when the lock file changed.
tools=$WARREN_BUILD_DIR/k8s-tools
mkdir -p "$tools"
if ! cmp -s "$src/tests/k8s/package-lock.json" "$tools/package-lock.json" || [ ! -d "$tools/node_modules" ]; then
    cp "$src/tests/k8s/package.json" "$src/tests/k8s/package-lock.json" "$tools/"
    (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >"$TEST_TMP/npm.log" 2>&1) ||
        { rm -f "$tools/package-lock.json"; fail "npm ci: $(tail -n 20 "$TEST_TMP/npm.log")"; }
fi
cp "$src"/tests/k8s/*.mjs "$tools/"

for dir in base overlays/example; do
    out="$TEST_TMP/$(basename "$dir").yaml"
    node "$tools/render.mjs" "$src/k8s/$dir" >"$out" || fail "rendering k8s/$dir"
    # The same as kustomize itself, where it is at hand (kubectl's, v5 here).
    if command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
        kubectl kustomize "$src/k8s/$dir" >"$TEST_TMP/kubectl-$(basename "$dir").yaml" 2>"$TEST_TMP/kubectl.err" ||
            fail "kubectl kustomize k8s/$dir: $(cat "$TEST_TMP/kubectl.err")"
        diff=$(node "$tools/compare.mjs" "$out" "$TEST_TMP/kubectl-$(basename "$dir").yaml") ||
            fail "the renderer and kubectl kustomize differ on k8s/$dir: $diff"
        log "k8s/$dir: rendered as kubectl kustomize does"
    fi
done

# The image's user (Dockerfile) is the pods' runAsUser.
WARREN_IMAGE_UID=$(sed -n 's/^USER \([0-9]*\)\(:[0-9]*\)\?$/\1/p' "$src/Dockerfile" | tail -n 1)
[ -n "$WARREN_IMAGE_UID" ] || fail "the Dockerfile has no numeric USER"
export WARREN_IMAGE_UID
mkdir "$TEST_TMP/out"
out=$(node "$tools/check.mjs" "$TEST_TMP/example.yaml" "$src" "$WARREN_BIN" "$TEST_TMP/out" 2>&1) || fail "$out"
log "$out"

out=$(promtool check rules "$TEST_TMP/out/rules.yaml" 2>&1) || fail "promtool check rules: $out"
assert_contains "$out" "SUCCESS" "promtool"

# The KEDA trigger's query is valid on the real schema and counts what it claims.
query=$(cat "$TEST_TMP/out/keda.sql")
psql_q "EXPLAIN $query" >/dev/null || fail "the KEDA query fails on the schema: $query"
assert_eq "$(psql_q "select count(*) from executions where status = 'requested'")" "$(psql_q "$query")" \
    "the KEDA query counts the requested executions"
pass
