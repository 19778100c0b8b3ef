# Helpers for the checks of what warren ships for deployment (systemd units, Kubernetes
# manifests, the Dockerfile, the package); source after common.sh.
# shellcheck shell=bash

# conf_value KEY [FILE] [VAR=VALUE...]: the effective value of KEY as `warren config check`
# prints it for FILE (default conf/warren.conf) with only the given WARREN__* variables set
# (none of the caller's environment), quotes removed.
conf_value() {
    local key=$1 file=${2:-$WARREN_SOURCE_DIR/conf/warren.conf}
    shift $(($# < 2 ? $# : 2))
    env -i PATH="$PATH" "$@" "$WARREN_BIN" config check -c "$file" |
        awk -v k="$key" '$1 == k { sub(/^[^=]*= /, ""); sub(/  # (default|file|env).*$/, ""); gsub(/^"|"$/, ""); print }'
}

# worker_drain_bound_s [FILE] [VAR=VALUE...]: the longest a worker takes from SIGTERM to exit
# (docs/worker.md, Shutdown): running handlers get worker.shutdown_timeout_s, the rest are
# stopped within worker.kill_grace_s, and unconfirmed reports are given up 10 s after that.
WORKER_REPORT_GIVE_UP_S=10
worker_drain_bound_s() {
    local shutdown grace
    shutdown=$(conf_value worker.shutdown_timeout_s "$@")
    grace=$(conf_value worker.kill_grace_s "$@")
    echo $((shutdown + grace + WORKER_REPORT_GIVE_UP_S))
}

# longest_handler_timeout_s [FILE] [VAR=VALUE...]: worker.default_timeout_s or the largest of
# worker.action_timeouts, whichever is longer.
longest_handler_timeout_s() {
    local def per
    def=$(conf_value worker.default_timeout_s "$@")
    per=$(conf_value worker.action_timeouts "$@" | tr ',' '\n' | sed -n 's/.*=//p' | sort -n | tail -n 1)
    echo $((${per:-0} > def ? per : def))
}

# seconds_of SYSTEMD_TIME: "60s", "2min", "1min 30s", "90" -> seconds.
seconds_of() {
    local total=0 part
    for part in $1; do
        case "$part" in
            *min) total=$((total + ${part%min} * 60)) ;;
            *ms) total=$((total + ${part%ms} / 1000)) ;;
            *s) total=$((total + ${part%s})) ;;
            *) total=$((total + part)) ;;
        esac
    done
    echo "$total"
}
