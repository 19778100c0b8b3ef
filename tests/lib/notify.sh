# Helpers for tests of readiness notification (sd_notify, src/common/notify.c); source after
# common.sh. The test plays the service manager: a socket it listens on, named to the daemon by
# NOTIFY_SOCKET.
# shellcheck shell=bash

# notify_listen NAME [abstract]: listen for notifications (tests/lib/notify_listen.py) on a socket
# in $TEST_TMP, or with `abstract` on an abstract name, and set NOTIFY_ADDR to the value for
# NOTIFY_SOCKET (not in $(...): the listener must be stopped by the test's own shell). What
# arrives goes to $TEST_TMP/NAME.notify: per datagram "PID=<sender>", its lines, then "--".
notify_listen() {
    local name=$1
    NOTIFY_ADDR="$TEST_TMP/$name.sock"
    if [ "${2:-}" = abstract ]; then NOTIFY_ADDR="@$(unique_name "warren-it-$name")"; fi
    bg_start "$name-listener" python3 "$WARREN_SOURCE_DIR/tests/lib/notify_listen.py" \
        "$NOTIFY_ADDR" "$TEST_TMP/$name.notify"
    try_until 10 test -e "$TEST_TMP/$name.notify" || fail "the notify listener $name did not start"
}

# notify_file NAME: what the listener NAME received so far.
notify_file() { printf '%s/%s.notify' "$TEST_TMP" "$1"; }

# notify_count NAME LINE: how many datagrams so far held LINE exactly (e.g. READY=1).
notify_count() {
    local n; n=$(grep -cxF -- "$2" "$(notify_file "$1")") || true
    printf '%s' "${n:-0}"
}

# wait_notify NAME REGEX [TIMEOUT_S]: wait until a datagram held a line matching REGEX whole
# (grep -E -x).
wait_notify() {
    try_until "${3:-30}" grep -qxE -- "$2" "$(notify_file "$1")" ||
        fail "no notification '$2' within ${3:-30}s (got: $(tr '\n' ' ' <"$(notify_file "$1")"))"
}

# notify_senders NAME: the distinct pids that sent to NAME, one a line.
notify_senders() { sed -n 's/^PID=//p' "$(notify_file "$1")" | sort -u; }
