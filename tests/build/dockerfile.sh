#!/usr/bin/env bash
# The Dockerfile, checked without a container engine: multi-stage on debian:12-slim only; the
# build stage runs `scripts/deps --build` and `scripts/package` (the package's own steps: the
# package test builds with the same script), copying scripts/deps before running it; the runtime
# stage installs the package that stage made; the build packages cover every dependency
# CMakeLists.txt requires; the image runs as a fixed non-root uid that matches its useradd and
# the Kubernetes manifests; ENTRYPOINT and CMD are exec form and name the installed binary
# (scripts/package's prefix); nothing of the build tree or the stack goes into the context.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

src=$WARREN_SOURCE_DIR
df=$src/Dockerfile
# Instructions one per line: continuation lines joined, comments dropped.
sed -e '/^[[:space:]]*#/d' "$df" | sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' | grep -v '^[[:space:]]*$' >"$TEST_TMP/steps"
stage=0
declare -A runs=()
while read -r instr rest; do
    case "$instr" in
    FROM)
        stage=$((stage + 1))
        [ "${rest%% *}" = debian:12-slim ] || fail "stage $stage is FROM ${rest%% *}, not debian:12-slim"
        ;;
    RUN) runs[$stage]+="$rest"$'\n' ;;
    ENTRYPOINT | CMD)
        jq -e 'type == "array" and all(type == "string")' >/dev/null 2>&1 <<<"$rest" ||
            fail "$instr is not in exec form (a JSON array): $rest"
        ;;
    esac
done <"$TEST_TMP/steps"
[ "$stage" -ge 2 ] || fail "the Dockerfile is not multi-stage"

build_runs=${runs[1]}
assert_contains "$build_runs" "bash scripts/deps --build" "the build stage installs the build packages"
assert_contains "$build_runs" "bash scripts/package --out /out" "the build stage makes the package"
[ "$(grep -n '^COPY scripts/deps' "$TEST_TMP/steps" | cut -d: -f1)" -lt \
    "$(grep -n 'scripts/deps --build' "$TEST_TMP/steps" | cut -d: -f1)" ] || fail "scripts/deps is run before it is copied"
grep -qx 'COPY --from=build /out/ /tmp/warren-deb/' "$TEST_TMP/steps" || fail "the runtime stage does not take the package from /out"
assert_contains "${runs[$stage]}" "apt-get install -y --no-install-recommends /tmp/warren-deb/warren_*.deb" \
    "the runtime stage installs the package"
grep -q 'scripts/package' "$src/tests/integration/deploy_package.sh" || fail "the package test no longer builds with scripts/package"

# Every Debian package CMakeLists.txt requires is among the build packages.
build_pkgs=$(sed -n '/^BUILD_PACKAGES=(/,/^)/p' "$src/scripts/deps" | grep -v '^ *#' | tr -s ' ()' '\n')
# shellcheck disable=SC2013 # package names are single words
for pkg in $(sed -n 's/^warren_require([A-Z_]* [^ ]* \([a-z0-9.+-]*\))$/\1/p' "$src/CMakeLists.txt"); do
    grep -qx "$pkg" <<<"$build_pkgs" || fail "CMakeLists.txt requires $pkg, which scripts/deps --build does not install"
done
grep -qx cmake <<<"$build_pkgs" || fail "scripts/deps --build lacks cmake"

# The user: fixed uid, non-root, the one useradd creates and the one the manifests run as.
user=$(sed -n 's/^USER //p' "$TEST_TMP/steps" | tail -n 1)
uid=${user%%:*}
{ [[ "$uid" =~ ^[0-9]+$ ]] && [ "$uid" -gt 0 ]; } || fail "USER $user is not a numeric non-root user"
assert_contains "${runs[$stage]}" "useradd --system --uid $uid" "the image creates the user it runs as"
for f in "$src"/k8s/base/*.yaml; do
    while read -r run_as; do
        assert_eq "$uid" "$run_as" "runAsUser in k8s/base/$(basename "$f")"
    done < <(sed -n 's/^ *runAsUser: \([0-9]*\).*/\1/p' "$f")
done

# The entrypoint is the binary the package installs (scripts/package's prefix), no init.
prefix=$(sed -n 's/.*-DCMAKE_INSTALL_PREFIX=\([^ ]*\).*/\1/p' "$src/scripts/package")
assert_eq "[\"$prefix/bin/warren\"]" "$(sed -n 's/^ENTRYPOINT //p' "$TEST_TMP/steps" | jq -c .)" "ENTRYPOINT"
assert_contains "$(cat "$df")" "no init, no tini" "the Dockerfile says how PID 1 is handled"
assert_eq "/etc/warren/warren.conf" "$(sed -n 's/^ENV WARREN_CONFIG=//p' "$TEST_TMP/steps")" "WARREN_CONFIG"

for ignored in .git 'build*/' .stack/ .bench/ .demo/; do
    grep -qxF "$ignored" "$src/.dockerignore" || fail ".dockerignore lets $ignored into the build context"
done
pass
