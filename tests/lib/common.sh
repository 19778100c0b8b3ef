# Helpers for tests/integration/*.sh: strict mode, a hard timeout, the private stack, assertions.
#
# A test starts with
#     . "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
#     require_stack
# and ends with `pass`. ctest provides WARREN_BIN, WARREN_SOURCE_DIR and WARREN_BUILD_DIR; run by
# hand, WARREN_SOURCE_DIR defaults to this checkout and WARREN_BIN to build/warren.
#
# Conventions: helpers that take a command accept either one string (evaluated, so it may hold
# pipes and quotes) or a command with its arguments. `fail` inside $(...) only leaves the subshell.
# shellcheck shell=bash

set -euo pipefail
set -E # the ERR trap also reports failures inside functions

TEST_NAME=$(basename "${BASH_SOURCE[1]:-$0}" .sh)
: "${WARREN_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${WARREN_BUILD_DIR:=$WARREN_SOURCE_DIR/build}"
: "${WARREN_BIN:=$WARREN_BUILD_DIR/warren}"
export WARREN_SOURCE_DIR WARREN_BUILD_DIR WARREN_BIN

# Below ctest's 300 s, so the test reports its own timeout and still runs its cleanups.
TEST_TIMEOUT=${WARREN_TEST_TIMEOUT:-240}
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/warren-it-$TEST_NAME.XXXXXX")
export TEST_TMP

_T_CLEANUPS=()
_T_ON_FAIL=()
_T_PASSED=0

_t_log() { printf '[%s %s] %s\n' "$(date +%T.%3N)" "$TEST_NAME" "$*" >&2; }
log() { _t_log "$*"; }

# _t_cmd ARGS...: one argument is shell text to eval; more are a command and its arguments.
_t_cmd() {
    if [ $# -eq 1 ]; then printf '%s' "$1"; else printf '%q ' "$@"; fi
}

# on_exit CMD...: run CMD when the test ends, pass or fail; last registered runs first.
on_exit() { _T_CLEANUPS+=("$(_t_cmd "$@")"); }

# on_fail CMD...: run CMD only when the test fails, e.g. to show a daemon's log.
on_fail() { _T_ON_FAIL+=("$(_t_cmd "$@")"); }

_T_FAILED=0
fail() {
    _T_FAILED=1
    printf 'FAIL: %s: %s\n' "$TEST_NAME" "$*" >&2
    exit 1
}

pass() {
    _T_PASSED=1
    printf 'PASS: %s\n' "$TEST_NAME"
    exit 0
}

_t_on_exit() {
    local rc=$? i
    set +e
    trap - ERR
    if [ -n "${_T_WATCHDOG:-}" ]; then
        pkill -P "$_T_WATCHDOG" 2>/dev/null # its sleep
        kill "$_T_WATCHDOG" 2>/dev/null
    fi
    if [ "$_T_PASSED" != 1 ]; then
        if [ "$rc" = 0 ]; then
            printf 'FAIL: %s: ended without calling pass\n' "$TEST_NAME" >&2
            rc=1
        elif [ "$_T_FAILED" = 0 ]; then
            printf 'FAIL: %s: exited with status %s\n' "$TEST_NAME" "$rc" >&2
        fi
        for ((i = ${#_T_ON_FAIL[@]} - 1; i >= 0; i--)); do eval "${_T_ON_FAIL[i]}" >&2; done
    fi
    for ((i = ${#_T_CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${_T_CLEANUPS[i]}"; done
    if [ "$_T_PASSED" = 1 ] || [ -n "${WARREN_TEST_CLEAN_TMP:-}" ]; then
        rm -rf "$TEST_TMP"
    else
        printf '%s: files kept in %s\n' "$TEST_NAME" "$TEST_TMP" >&2
    fi
    exit "$rc"
}

_t_on_err() {
    # shellcheck disable=SC2016 # backquotes quote a command in the text
    printf '%s: line %s: `%s` exited %s\n' "$TEST_NAME" "$1" "$2" "$3" >&2
}

_t_on_timeout() {
    _T_FAILED=1
    printf 'FAIL: %s: timed out after %ss\n' "$TEST_NAME" "$TEST_TIMEOUT" >&2
    exit 124
}

trap _t_on_exit EXIT
trap '_t_on_err "$LINENO" "$BASH_COMMAND" "$?"' ERR
trap _t_on_timeout TERM INT

# The watchdog signals the test, then ends its children: bash only runs the TERM trap once the
# foreground command returns, and a hung command would otherwise hold the test until ctest kills it.
_t_start_watchdog() {
    local test_pid=$$
    (
        trap - EXIT ERR TERM INT
        sleep "$TEST_TIMEOUT" &
        wait $! || exit 0
        kill -TERM "$test_pid" 2>/dev/null || exit 0
        local child
        for child in $(pgrep -P "$test_pid"); do
            [ "$child" = "$BASHPID" ] || kill -TERM "$child" 2>/dev/null
        done
    ) </dev/null >/dev/null 2>&1 &
    _T_WATCHDOG=$!
}
_t_start_watchdog

# --- the private stack -------------------------------------------------------------------------

# require_stack: load `scripts/stack env` of the checkout under test; fail if the stack is down.
require_stack() {
    local stack="$WARREN_SOURCE_DIR/scripts/stack" out
    if ! out=$(bash "$stack" status 2>&1); then
        fail "private stack not running; start it with: scripts/stack start
$out"
    fi
    eval "$(bash "$stack" env)"
    # Daemons' HTTP servers on any free port: tests (and other checkouts' tests) run executors
    # side by side. A test that talks to one reads its port from the log (http_port).
    export WARREN__API__LISTEN=${WARREN__API__LISTEN:-127.0.0.1:0}
}

# http_port NAME [SERVER]: the port a background daemon's HTTP server listens on ("api" for the
# executor's, "health" for a worker's), from its "http listening" log line; waits up to 20 s.
http_port() {
    local log server=${2:-api}
    log=$(bg_log "$1")
    try_until 20 "grep -q '\"msg\":\"http listening\".*\"server\":\"$server\"' '$log'" ||
        fail "$1: no 'http listening' line for server $server in $log"
    grep '"msg":"http listening"' "$log" | grep "\"server\":\"$server\"" | tail -1 |
        sed -E 's/.*"port":"([0-9]+)".*/\1/'
}

# stack CMD...: the stack script itself, e.g. `stack rabbit-stop` in a broker-outage test.
stack() { bash "$WARREN_SOURCE_DIR/scripts/stack" "$@"; }

# rmq ARGS...: rabbitmqctl against the private node (exact queue counts: rmq list_queues -s name messages).
rmq() { "$WARREN_RABBITMQCTL" "$@"; }

# psql_q SQL: one statement on the private database, unaligned output without headers.
# The stack's password travels in the environment, not on psql's command line.
psql_q() {
    PGPASSWORD=${WARREN_PG_PASSWORD:-} psql -X -q -At -v ON_ERROR_STOP=1 \
        "${WARREN__DATABASE__URL/":${WARREN_PG_PASSWORD:-}@"/@}" -c "$1"
}

# mgmt_get PATH: GET /api/PATH (leading "/" or "/api/" optional); fails on an HTTP error.
# As the stack's administrator, whose credentials curl reads from $WARREN_STACK_NETRC.
mgmt_get() { _t_mgmt GET "$1"; }
# mgmt_put PATH JSON, mgmt_post PATH JSON, mgmt_delete PATH: the same for writes.
mgmt_put() { _t_mgmt PUT "$1" "$2"; }
mgmt_post() { _t_mgmt POST "$1" "$2"; }
mgmt_delete() { _t_mgmt DELETE "$1"; }

# mgmt_status PATH: only the HTTP status of a GET, e.g. 404 for a missing queue, 000 for no answer.
mgmt_status() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 10 --netrc-file "$WARREN_STACK_NETRC" \
        "$(_t_mgmt_url "$1")" || true
}

_t_mgmt_url() {
    local path=${1#/}
    printf '%s/api/%s' "$WARREN_MGMT_URL" "${path#api/}"
}

_t_mgmt() {
    local method=$1 url
    url=$(_t_mgmt_url "$2")
    if [ $# -ge 3 ]; then
        curl -sS -f --max-time 10 --netrc-file "$WARREN_STACK_NETRC" -X "$method" \
            -H 'content-type: application/json' --data "$3" "$url"
    else
        curl -sS -f --max-time 10 --netrc-file "$WARREN_STACK_NETRC" -X "$method" "$url"
    fi
}

# declare_queue NAME [ARGUMENTS_JSON]: a durable classic queue via the management API, deleted at exit.
declare_queue() {
    local q=$1 args=${2:-'{}'}
    mgmt_put "queues/%2F/$(urlencode "$q")" "{\"durable\":true,\"auto_delete\":false,\"arguments\":$args}" >/dev/null
    on_exit mgmt_delete "queues/%2F/$(urlencode "$q")"
}

# queue_messages NAME: messages ready in a queue, exact (not the management API's lagging count).
queue_messages() {
    rmq list_queues -s name messages | awk -v q="$1" '$1 == q { print $2; found = 1 } END { exit !found }'
}

urlencode() { jq -rn --arg s "$1" '$s | @uri'; }

# unique_name PREFIX: a name no other test (or earlier run) uses, for queues, workers, rows.
_T_SEQ=0
unique_name() {
    _T_SEQ=$((_T_SEQ + 1))
    printf '%s-%s-%s-%s%s' "$1" "$TEST_NAME" "$$" "$_T_SEQ" "$RANDOM"
}

# private_database PREFIX: a database of the test's own on the stack's server, dropped at exit;
# WARREN__DATABASE__URL names it from then on (not migrated: exec_start or the test does that).
private_database() {
    local db base_url=$WARREN__DATABASE__URL
    db=$(unique_name "$1" | tr -c 'a-z0-9\n' '_')
    psql_q "CREATE DATABASE $db"
    on_exit psql -X -q "$base_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
    export WARREN__DATABASE__URL="${base_url%/*}/$db"
}

# --- assertions and waiting --------------------------------------------------------------------

assert_eq() {
    [ "$1" = "$2" ] || fail "${3:-values differ}: expected '$1', got '$2'"
}

assert_contains() {
    case "$1" in *"$2"*) ;; *) fail "${3:-missing text}: '$2' not found in: $1" ;; esac
}

assert_not_contains() {
    case "$1" in *"$2"*) fail "${3:-unexpected text}: '$2' found in: $1" ;; *) ;; esac
}

# try_until TIMEOUT_S CMD...: poll CMD until it succeeds (0) or TIMEOUT_S passes (1).
try_until() {
    local timeout=$1; shift
    local cmd; cmd=$(_t_cmd "$@")
    local deadline=$(($(date +%s%N) / 1000000 + timeout * 1000))
    until (eval "$cmd") >/dev/null 2>&1; do
        [ $(($(date +%s%N) / 1000000)) -lt "$deadline" ] || return 1
        sleep "${WARREN_POLL_INTERVAL:-0.2}"
    done
}

# wait_until TIMEOUT_S CMD...: like try_until, but the test fails on timeout.
wait_until() {
    try_until "$@" || fail "timed out after $1s waiting for: $(_t_cmd "${@:2}")"
}

# --- background processes ----------------------------------------------------------------------

# bg_start NAME CMD...: run CMD in the background with output in $TEST_TMP/NAME.log; sets BG_PID.
# The process is stopped when the test ends and its log shown when the test fails.
bg_start() {
    local name=$1; shift
    local log="$TEST_TMP/$name.log"
    "$@" >"$log" 2>&1 </dev/null &
    BG_PID=$!
    on_exit bg_stop "$BG_PID"
    on_fail "echo '--- $name (pid $BG_PID) log, last 60 lines:'; tail -n 60 '$log'"
}

# bg_log NAME: path of a background process's log.
bg_log() { printf '%s/%s.log' "$TEST_TMP" "$1"; }

# wait_log NAME PATTERN [TIMEOUT_S]: wait until the log of NAME has a line matching PATTERN (grep -E).
wait_log() {
    local log; log=$(bg_log "$1")
    try_until "${3:-30}" grep -qE -- "$2" "$log" || fail "no line matching '$2' in $log within ${3:-30}s"
}

# log_since NAME PATTERN: the lines of NAME's log from the last one matching PATTERN (grep -E) on,
# that line included; nothing when none matches. For "after the reload, ..." assertions.
log_since() {
    awk -v re="$2" '$0 ~ re { n = NR; delete kept } n { kept[NR] = $0 }
        END { for (i = n; n && i <= NR; i++) print kept[i] }' "$(bg_log "$1")"
}

# sighup NAME PID REGEX [TIMEOUT_S]: send SIGHUP to PID, wait for one more line matching REGEX
# (grep -E) in NAME's log than there was, and set LOG_LINE to the last such line (not in $(...):
# a failure must end the test).
# shellcheck disable=SC2034 # a result for the test that called it
sighup() {
    local log n
    log=$(bg_log "$1")
    n=$(grep -cE -- "$3" "$log") || true
    kill -HUP "$2"
    try_until "${4:-30}" "[ \$(grep -cE -- '$3' '$log') -gt $n ]" ||
        fail "no new line matching '$3' in $log within ${4:-30}s of SIGHUP"
    LOG_LINE=$(grep -E -- "$3" "$log" | tail -n 1)
}

# bg_stop PID [TIMEOUT_S] [SIGNAL]: signal (TERM), wait, then KILL; returns the process's exit status,
# so check it with `rc=0; bg_stop "$pid" || rc=$?`.
bg_stop() {
    local pid=$1 timeout=${2:-10} sig=${3:-TERM} i
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return; }
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}
