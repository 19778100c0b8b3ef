# Helpers for the MessageClient tests that drive bench/mq_probe.c; source after common.sh.
# shellcheck shell=bash

# require_mq_probe: sets PROBE to the built driver, fails the test if it is missing.
require_mq_probe() {
    PROBE="$WARREN_BUILD_DIR/mq_probe"
    [ -x "$PROBE" ] || fail "mq_probe not built at $PROBE (cmake --build build)"
}

# calls_slower_than MS: the mq_probe lines on stdin whose elapsed_ms is MS or more.
calls_slower_than() {
    awk -v limit="$1" '{
        for (i = 1; i <= NF; i++)
            if ($i ~ /^elapsed_ms=/) { split($i, a, "="); if (a[2] + 0 >= limit) print }
    }'
}
