#!/usr/bin/env bash
# Slow clients cannot starve the health probes: 1,000 sockets that send half a request line and
# idle (opened again when closed) against the executor's api.listen and 300 against a worker's
# http_listen, for 60 s, while /livez is asked on a new connection every 200 ms on each: every
# probe is answered 200 within 100 ms. A new connection at the limit takes the slot of the one
# that has waited longest for its head (docs/api.md, "Limits").
# shellcheck disable=SC2154 # w is set by new_worker (printf -v)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack

SECONDS_HELD=${WARREN_SLOW_CLIENTS_S:-60}
# 1,300 sockets and the probes in one process: more than the usual 1,024 descriptors.
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 1400 ] || fail "ulimit -n is $(ulimit -n); this test needs 1,400 descriptors"

worker_env
export WARREN__WORKER__HTTP_LISTEN=127.0.0.1:0
exec_start ex
new_worker w slow
start_worker wk "$w"
ep=$(http_port ex)
wp=$(http_port wk health)
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$ep/livez")" "executor livez before"

log "1,000 slow sockets against the executor, 300 against the worker, for ${SECONDS_HELD} s"
python3 "$WARREN_SOURCE_DIR/tests/lib/slow_clients.py" "$SECONDS_HELD" 200 \
    "127.0.0.1:$ep:1000" "127.0.0.1:$wp:300" >"$TEST_TMP/probes"
cat "$TEST_TMP/probes" >&2
field() { grep "^$1 " "$TEST_TMP/probes" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
for port in "$ep" "$wp"; do
    probes=$(field "$port" probes)
    [ "$probes" -ge $((SECONDS_HELD * 3)) ] || fail "port $port: only $probes probes answered"
    assert_eq 0 "$(field "$port" failed)" "port $port: probes without a 200"
    assert_eq 0 "$(field "$port" over_100ms)" "port $port: probes over 100 ms (max $(field "$port" max_ms) ms)"
    # The pressure was real: the slow sockets were closed and opened again all along.
    [ "$(field "$port" reopened)" -ge 300 ] || fail "port $port: the slow sockets were not cycled"
done
evicted=$(curl -s --max-time 3 "http://127.0.0.1:$ep/metrics" | awk '$1 == "warren_http_evicted_total" { print $2 }')
[ "${evicted:-0}" -ge 1000 ] || fail "the executor evicted ${evicted:-0} connections, fewer than the slow ones"
log "executor: ${evicted} connections evicted for new ones"
exec_stop "$EXEC_PID" ex
pass
