#!/usr/bin/env bash
# README.md's commands, run as a new user would, so the README cannot rot. Each command block
# carries a marker saying how it is tested (tests/lib/readme_blocks.py, docs/development.md "The
# README's commands"): `run` blocks run as bash scripts from the checkout with the build's
# `warren` first on PATH and the stack's environment (as `eval "$(scripts/stack env)"` gives
# it), on warren's default topology; each line of a `daemons` block runs in the background until
# it says READY=1 (sd_notify, the socket is the test's) and goes on for the blocks after it, to
# be stopped with SIGTERM at the end (exit 0); `instead` runs its command in place of the block;
# `paths` blocks are not run. Every path a block names inside the checkout must exist.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/notify.sh"
require_stack

src=$WARREN_SOURCE_DIR
mapfile -t blocks < <(python3 "$src/tests/lib/readme_blocks.py" "$src/README.md" "$src" \
    2>"$TEST_TMP/blocks.err" || echo FAILED)
[ "${blocks[-1]:-FAILED}" != FAILED ] || fail "README.md's blocks: $(cat "$TEST_TMP/blocks.err")"
bin="$TEST_TMP/bin"
mkdir "$bin"
ln -s "$WARREN_BIN" "$bin/warren"
# The README's worker w1 declares its queue on the shared broker.
on_exit "mgmt_delete 'queues/%2F/worker.w1.executions' >/dev/null 2>&1"

# in_readme_env CMD...: CMD from the checkout with the build's warren first on PATH (and the
# build directory ctest runs from, for scripts/demo).
in_readme_env() {
    env -C "$src" PATH="$bin:$PATH" WARREN_BUILD_DIR="$WARREN_BUILD_DIR" "$@" </dev/null
}

# run_block LINE TEXT: TEXT as a bash script; it must exit 0.
run_block() {
    local rc=0 out="$TEST_TMP/block-$1.out"
    in_readme_env timeout 200 bash -euo pipefail -c "$2" >"$out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || fail "README.md:$1: the block exited $rc:
$2--- its output, last 40 lines:
$(tail -n 40 "$out")"
}

# start_daemons LINE TEXT: each line of TEXT in the background until it says READY=1.
start_daemons() {
    local cmds cmd i=0 name
    mapfile -t cmds <<<"$2"
    for cmd in "${cmds[@]}"; do
        cmd=${cmd%%#*}
        [ -n "${cmd// /}" ] || continue
        i=$((i + 1))
        name="daemon-$1-$i"
        notify_listen "$name"
        bg_start "$name" env -C "$src" PATH="$bin:$PATH" NOTIFY_SOCKET="$NOTIFY_ADDR" \
            bash -c "exec $cmd"
        daemons+=("$BG_PID")
        wait_notify "$name" READY=1 60
        assert_eq "$BG_PID" "$(notify_senders "$name")" "README.md:$1: '$cmd' notified from its pid"
    done
}

# others_live WORKERS_JSON: how many live workers outside WORKERS_JSON (ids) offer an action that
# one of those offers.
# shellcheck disable=SC2317 # called in wait_until's condition
others_live() {
    "$WARREN_BIN" workers --json | jq --argjson ours "$1" '
        (map(select(.id as $i | $ours | index($i))) | map(.capabilities[])) as $caps
        | map(select(.live and (.id as $i | $ours | index($i) | not)
                     and any(.capabilities[]; . as $c | $caps | index($c)))) | length'
}

# settle_workers SINCE TEXT: a fresh executor counts every worker's heartbeats from when it
# first hears them (executor_state.heard_since; docs/executor.md, "Hearing heartbeats"), so for
# a few seconds a worker that died before it, such as the demo's SIGKILLed demo-w3, counts as
# live and could be sent the README's next execution, which would then expire in its queue.
# Wait until the executor started after SINCE (database time) has recorded hearing, and only
# the workers the block started (--name) are live for their actions.
settle_workers() {
    local ours
    ours=$(grep -o -- '--name [^ ]*' <<<"$2" | cut -d' ' -f2 | jq -R . | jq -cs .)
    [ "$ours" != "[]" ] || return 0
    wait_until 60 "[ \"\$(psql_q \"select heard_since >= '$1' from executor_state\")\" = t ]"
    wait_until 60 "[ \"\$(others_live '$ours')\" = 0 ]"
}

daemons=()
declare -A ran=()
for b in "${blocks[@]}"; do
    line=$(jq -r .line <<<"$b") mode=$(jq -r .mode <<<"$b") args=$(jq -r .args <<<"$b")
    text=$(jq -r .text <<<"$b")
    ran[$mode]=1
    log "README.md:$line: $mode $args (paths checked: $(jq -r '.paths | join(" ")' <<<"$b"))"
    case $mode in
    run) run_block "$line" "$text" ;;
    instead) run_block "$line" "$args" ;;
    daemons)
        since=$(psql_q "select now()")
        start_daemons "$line" "$text"
        settle_workers "$since" "$text"
        ;;
    esac
done
for pid in "${daemons[@]}"; do
    rc=0
    bg_stop "$pid" 30 || rc=$?
    assert_eq 0 "$rc" "exit status of README daemon $pid after SIGTERM"
done
# A parser that found nothing would pass: the README has blocks of every kind.
for mode in run daemons instead paths; do
    [ -n "${ran[$mode]:-}" ] || fail "README.md: no block marked '$mode' found"
done
pass
