#!/usr/bin/env bash
# `warren executor` refuses to start on a database with pending migrations (and says to run
# `warren migrate`), or without a broker; usage errors exit 2.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
require_stack

isolate_topology
run_warren help executor --help
assert_eq 0 "$RUN_RC" "--help"
assert_contains "$RUN_OUT" "usage: warren executor" "--help text"
run_warren bad executor --frobnicate
assert_eq 2 "$RUN_RC" "unknown option"

# A database of its own, with no schema yet.
db="it_executor_startup_$$_$RANDOM"
psql_q "create database $db" >/dev/null
on_exit "psql -X -q '$WARREN__DATABASE__URL' -c 'drop database if exists $db with (force)' >/dev/null"
fresh_url="${WARREN__DATABASE__URL%/*}/$db"
WARREN__DATABASE__URL=$fresh_url run_warren pending executor
assert_eq 1 "$RUN_RC" "exit status with pending migrations"
# shellcheck disable=SC2016 # backquotes quote a command in the text
assert_contains "$RUN_ERR" 'database migrations pending: run `warren migrate` first' "the way out"

WARREN__DATABASE__URL=$fresh_url run_warren migrate migrate
assert_eq 0 "$RUN_RC" "migrate ($RUN_ERR)"
WARREN__DATABASE__URL=$fresh_url WARREN__MESSAGE_QUEUE__RABBITMQ__URL="amqp://guest:guest@127.0.0.1:1/%2f" \
    run_warren nobroker executor
assert_eq 1 "$RUN_RC" "exit status without a broker"
assert_contains "$RUN_ERR" "cannot connect to RabbitMQ" "says why"
pass
