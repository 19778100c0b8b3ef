#!/usr/bin/env bash
# Outage helpers work: rabbit-stop/rabbit-start and pg-stop/pg-start take a part down and keep its data.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
require_stack

queue=$(unique_name restart)
declare_queue "$queue"
amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -r "$queue" -p -b persistent-body
table=$(unique_name restart | tr -- '-' '_')
psql_q "create table $table (v text)"
on_exit psql_q "drop table if exists $table"
psql_q "insert into $table values ('kept')"

# Whatever happens below, the next test finds the stack up again.
on_exit stack start

stack rabbit-stop
assert_eq 000 "$(mgmt_status overview)" "management API while the node is down"
if amqp-publish --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -r "$queue" -b x 2>/dev/null; then
    fail "publish succeeded with the node down"
fi
if stack status >/dev/null 2>&1; then fail "status reports a stopped node as running"; fi
stack rabbit-start
assert_eq 1 "$(queue_messages "$queue")" "persistent message survives the node restart"
assert_eq persistent-body "$(amqp-get --url "$WARREN__MESSAGE_QUEUE__RABBITMQ__URL" -q "$queue")"

stack pg-stop immediate
if psql_q "select 1" 2>/dev/null; then fail "query succeeded with postgres down"; fi
stack pg-start
assert_eq kept "$(psql_q "select v from $table")" "row survives the postgres restart"

stack status >/dev/null || fail "stack not fully up after the restarts"
pass
