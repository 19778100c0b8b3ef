#!/usr/bin/env bash
# The chaos run (issue 7 §2, docs/reliability.md): two executors and three workers run
# CHAOS_EXECUTIONS (5,000) executions of a mix (core.noop, short core.sleep, core.fail, some
# pinned to each worker) fed in chunks, while a driver on a fixed seed (CHAOS_SEED, printed)
# restarts RabbitMQ three times, restarts PostgreSQL (immediate stop), kills worker 1 with SIGKILL
# and restarts it under the same name at once, kills worker 2 and leaves it dead, and kills
# executor 2 with SIGKILL and restarts it. Then, from the database: every execution is terminal,
# none is missing or doubled, none completed more than once per attempt, every failure has a
# reason, every failure that came through the dead-letter exchange has its dead-letter row, and
# the counts by final state add up. One line prints those counts.
: "${WARREN_TEST_TIMEOUT:=285}"
export WARREN_TEST_TIMEOUT
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/executor.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/chaos.sh"
require_stack

SEED=${CHAOS_SEED:-7}
N=${CHAOS_EXECUTIONS:-5000}
CHUNKS=50
RANDOM=$SEED # the fault schedule below draws from bash's generator, seeded
t0=$SECONDS
log "seed $SEED, $N executions (CHAOS_SEED, CHAOS_EXECUTIONS)"

chaos_env
new_worker W1 chaos1 # killed with SIGKILL, restarted under the same name at once
new_worker W2 chaos2 # killed with SIGKILL, left dead
new_worker W3 chaos3 # left alone

# The plan: one row per execution to submit, the mix drawn from md5(seed:i) so it is the same for
# a seed whatever else happens: 10 % core.noop pinned to one of the workers, 12 % core.sleep of
# 0.05-0.24 s (timeout 10 s), 10 % core.fail (exit code 1-3), the rest core.noop.
psql_q "create table chaos_plan as
    select i, r, s,
           case when r < 10 then 'core.noop' when r < 22 then 'core.sleep'
                when r < 32 then 'core.fail' else 'core.noop' end as action_ref,
           case when r < 10 then (array['$W1', '$W2', '$W3'])[1 + s % 3] end as pinned_worker,
           case when r >= 10 and r < 22 then 10 end as timeout_s
    from (select i, h % 100 as r, h / 100 as s
          from (select i, ('x' || substr(md5('$SEED:' || i), 1, 7))::bit(28)::int as h
                from generate_series(1, $N) i) g) m;
    alter table chaos_plan add primary key (i)" >/dev/null

# feed FROM TO: submit plan rows FROM..TO, once each even when the insert is retried across the
# PostgreSQL restart (its COMMIT may have happened before the connection died).
feed() {
    local sql="insert into executions (action_ref, pinned_worker, timeout_s, params)
        select action_ref, pinned_worker, timeout_s,
               jsonb_build_object('chaos', i) || case action_ref
                   when 'core.sleep' then jsonb_build_object('seconds', 0.05 + (s % 20) / 100.0)
                   when 'core.fail' then jsonb_build_object('code', 1 + s % 3)
                   else '{}' end
        from chaos_plan p
        where i between $1 and $2
          and not exists (select 1 from executions e where e.params->>'chaos' = p.i::text)
        order by i"
    until psql_q "$sql" >/dev/null 2>&1; do sleep 0.3; done
}

# The feeder: CHUNKS chunks, one every 1.2 s, so work is in flight during every fault.
(
    trap - EXIT ERR TERM INT
    chunk=$(((N + CHUNKS - 1) / CHUNKS))
    for ((from = 1; from <= N; from += chunk)); do
        to=$((from + chunk - 1))
        [ "$to" -le "$N" ] || to=$N
        feed "$from" "$to"
        sleep 1.2
    done
) &
FEEDER=$!
on_exit "kill $FEEDER 2>/dev/null || true"

chaos_executor e1
E1=$BG_PID
chaos_executor e2
E2=$BG_PID
start_worker w1 "$W1"
P1=$BG_PID
start_worker w2 "$W2"
P2=$BG_PID
start_worker w3 "$W3"
P3=$BG_PID

# in_flight WORKER: the executions scheduled or running on WORKER now, for the fault log.
# shellcheck disable=SC2317 # called from the fault_ functions
in_flight() {
    psql_q "select count(*) filter (where status = 'scheduled') || ' scheduled, '
                   || count(*) filter (where status = 'running') || ' running'
            from executions where worker = '$1'" 2>/dev/null || echo '(database down)'
}

# shellcheck disable=SC2317 # run through the faults array
fault_rabbit() {
    log "fault: RabbitMQ restart"
    stack rabbit-stop >/dev/null 2>&1
    sleep "0.$((RANDOM % 10))"
    stack rabbit-start >/dev/null 2>&1 || fail "RabbitMQ did not come back"
}
# shellcheck disable=SC2317 # run through the faults array
fault_pg() {
    log "fault: PostgreSQL immediate stop and start"
    stack pg-stop immediate >/dev/null 2>&1
    sleep "1.$((RANDOM % 10))"
    stack pg-start >/dev/null 2>&1 || fail "PostgreSQL did not come back"
}
# shellcheck disable=SC2317 # run through the faults array
fault_worker_restart() {
    log "fault: SIGKILL worker 1 ($W1: $(in_flight "$W1")), restarted under the same name"
    kill -KILL "$P1"
    local killed=$SECONDS
    start_worker w1-again "$W1"
    P1=$BG_PID
    log "worker 1 consuming again $((SECONDS - killed)) s after the kill"
}
# shellcheck disable=SC2317 # run through the faults array
fault_worker_dead() {
    log "fault: SIGKILL worker 2 ($W2: $(in_flight "$W2")), left dead"
    kill -KILL "$P2"
}
# shellcheck disable=SC2317 # run through the faults array
fault_executor() {
    log "fault: SIGKILL executor 2, restarted"
    kill -KILL "$E2"
    chaos_executor e2-again
    E2=$BG_PID
}

# The schedule: the seven faults in an order and with pauses (2-6 s) drawn from the seed.
faults=(fault_rabbit fault_rabbit fault_rabbit fault_pg fault_worker_restart fault_worker_dead
    fault_executor)
for ((i = ${#faults[@]} - 1; i > 0; i--)); do
    j=$((RANDOM % (i + 1)))
    tmp=${faults[i]} faults[i]=${faults[j]} faults[j]=$tmp
done
log "fault schedule: ${faults[*]}"
sleep 3
for f in "${faults[@]}"; do
    "$f"
    sleep $((2 + RANDOM % 5))
done
log "faults done after $((SECONDS - t0)) s; $(chaos_counts)"
wait "$FEEDER" || fail "the feeder failed"

# Convergence: every monitor deadline of chaos.conf is well under a minute.
try_until 120 "[ \"\$(psql_q \"select count(*) from executions where status not in ($CHAOS_TERMINAL)\")\" = 0 ]" ||
    fail "executions not terminal 120 s after the faults ($(chaos_counts)):
$(chaos_unfinished)"
log "all terminal after $((SECONDS - t0)) s"

# A worker process that lived to the end finished everything it started, and its completions
# are durable once confirmed: none of its executions may stay abandoned (an abandon while the
# executor could not hear it is undone by the late completion). Worker 2 died with its work, and
# worker 1's first process too (its rows carry the old incarnation).
SURVIVOR_ABANDONED="select e.id, e.worker, e.error from executions e
    join workers w on w.id = e.worker and w.incarnation = e.incarnation
    where e.status = 'abandoned' and e.worker <> '$W2' order by e.id"
# shellcheck disable=SC2317 # called by try_until
survivors_settled() {
    [ -z "$(psql_q "$SURVIVOR_ABANDONED")" ] && [ "$(queue_counts "$TOPO_RESULTS")" = "0 0 2" ]
}
try_until 30 survivors_settled || true # asserted below, with the ids

# Everyone stops cleanly (a late completion can only turn abandoned into completed), and the
# database is then still: the assertions below see one state.
for pid in "$P1" "$P3"; do
    rc=0
    bg_stop "$pid" 15 || rc=$?
    assert_eq 0 "$rc" "worker $pid exit status after SIGTERM"
done
for pid in "$E1" "$E2"; do
    rc=0
    bg_stop "$pid" 15 || rc=$?
    assert_eq 0 "$rc" "executor $pid exit status after SIGTERM"
done

# --- the invariants ------------------------------------------------------------------------------
chaos_none "executions not terminal" \
    "select id, status, worker, attempt from executions where status not in ($CHAOS_TERMINAL)"
chaos_none "planned executions missing" \
    "select i from chaos_plan p where not exists
        (select 1 from executions e where e.params->>'chaos' = p.i::text) order by i"
chaos_none "executions submitted twice (plan index: ids)" \
    "select params->>'chaos' || ': ' || string_agg(id::text, ',') from executions
     group by params->>'chaos' having count(*) > 1"
chaos_none "executions that are not the plan's" \
    "select id from executions e where not exists
        (select 1 from chaos_plan p where e.params->>'chaos' = p.i::text)"
chaos_none "completed more than once in one attempt (id attempt count)" \
    "select execution_id, attempt, count(*) from execution_history where to_status = 'completed'
     group by execution_id, attempt having count(*) > 1"
chaos_none "completed in more than one attempt (id attempts)" \
    "select execution_id, string_agg(attempt::text, ',') from execution_history
     where to_status = 'completed' group by execution_id having count(distinct attempt) > 1"
chaos_none "failures without a reason (id status)" \
    "select id, status from executions
     where status in ('failed', 'timeout', 'abandoned') and coalesce(error, '') = ''"
chaos_none "failures through the dead-letter exchange without a dead-letter row (id error)" \
    "select id, error from executions e
     where status = 'failed'
       and error in ('Worker queue TTL expired', 'Dispatch dead-lettered by the broker',
                     'Start deadline passed before a worker could start it')
       and not exists (select 1 from dead_letters d where d.execution_id = e.id)"
chaos_none "abandoned although their worker process lived and reported (id worker error)" \
    "$SURVIVOR_ABANDONED"
chaos_none "core.fail completed (id)" \
    "select id from executions where action_ref = 'core.fail' and status = 'completed'"
chaos_none "completed without a result (id)" \
    "select id from executions where status = 'completed' and result is null"
total=$(psql_q "select count(*) from executions")
assert_eq "$N" "$total" "executions in all"
sum=$(psql_q "select sum(n) from (select count(*) n from executions group by status) c")
assert_eq "$N" "$sum" "counts by final state add up"

reasons=$(psql_q "select coalesce(string_agg(n || ' ' || e, '; ' order by n desc), 'none')
    from (select regexp_replace(error, '[0-9][0-9a-f:. -]*', '#', 'g') e, count(*) n
          from executions where status <> 'completed' group by 1) r")
traces=$(psql_q "select coalesce(string_agg(reason || '=' || n, ' ' order by reason), 'none')
    from (select reason, count(*) n from dead_letters group by reason) d")
late=$(psql_q "select count(*) from execution_history where note = 'late completion'")
echo "chaos: seed=$SEED executions=$N $(chaos_counts) late_completions=$late dead_letters: $traces; took $((SECONDS - t0)) s"
log "non-completed by reason: $reasons"
pass
