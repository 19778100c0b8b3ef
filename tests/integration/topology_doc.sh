#!/usr/bin/env bash
# docs/rabbitmq.md's table "The topology, object by object" is what the broker holds after
# `warren topology declare --worker w1` with the default configuration and with the worker w1
# running, on a virtual host of the test's own: every row is live with its type, flags and
# arguments, and every live exchange, queue and binding is a row. The documented rabbitmqadmin
# and rabbitmqctl commands print those arguments, and a message's properties without taking it.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/topology.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/worker.sh"
require_stack

doc="$WARREN_SOURCE_DIR/docs/rabbitmq.md"

# The defaults, whatever the environment says: no file, no overrides but the connections.
unset WARREN_CONFIG
while read -r v; do
    case "$v" in
    WARREN__DATABASE__URL | WARREN__MESSAGE_QUEUE__RABBITMQ__URL | WARREN__API__LISTEN) ;;
    *) unset "$v" ;;
    esac
done < <(compgen -e | grep '^WARREN__' || true)
export WARREN__LOG__FORMAT=json # for wait_log; nothing of the topology

# A virtual host of its own: the default names, without meeting any other test's queues.
vhost=$(unique_name doc)
vhost_path=$(urlencode "$vhost")
mgmt_put "vhosts/$vhost_path" '{}' >/dev/null
on_exit "mgmt_delete 'vhosts/$vhost_path' >/dev/null 2>&1"
mgmt_put "permissions/$vhost_path/$(urlencode "$WARREN_RABBIT_USER")" \
    '{"configure":".*","write":".*","read":".*"}' >/dev/null
export WARREN__MESSAGE_QUEUE__RABBITMQ__URL="${WARREN__MESSAGE_QUEUE__RABBITMQ__URL%/*}/$vhost_path"
admin() { "$WARREN_RABBITMQADMIN" -V "$vhost" "$@"; }

run_warren declare topology declare --worker w1
assert_eq 0 "$RUN_RC" "declare the topology ($RUN_ERR)"
start_worker worker w1
try_until 20 "[ \"\$(admin -f raw_json list queues name | jq '[.[] | select(.name == \"worker.w1.control\")] | length')\" = 1 ]" ||
    fail "the worker's control queue did not appear"

# --- the table, one normalised line per object ---
table=$(sed -n '/<!-- topology-table: begin -->/,/<!-- topology-table: end -->/p' "$doc" |
    grep -E '^\| (exchange|queue|binding) \|') || fail "no topology table in $doc"
# The arguments as key=JSON, sorted: the same text from the table's JSON and the broker's.
args_jq='to_entries | sort_by(.key) | map("\(.key)=\(.value | tojson)") | join(",")'
flag() { case ", $1," in *", $2,"*) echo true ;; *) echo false ;; esac; }
want=""
executor_rows=""
while IFS='|' read -r _ kind name props arg by _; do
    kind=$(xargs <<<"$kind") by=$(xargs <<<"$by")
    name=$(tr -d '`' <<<"$name" | xargs) props=$(xargs <<<"$props")
    arg=$(sed -e 's/^ *`//' -e 's/` *$//' <<<"$arg")
    if [ "$by" = executor ]; then # declared by the executor's first event: checked below
        executor_rows+="$kind $name $props"$'\n'
        continue
    fi
    case "$kind" in
    exchange) line="exchange $name ${props%%,*} durable=$(flag "$props" durable)" ;;
    queue)
        line="queue $name durable=$(flag "$props" durable) exclusive=$(flag "$props" exclusive)"
        line+=" auto_delete=$(flag "$props" auto-delete) $(jq -r "$args_jq" <<<"$arg")" ;;
    binding) line="binding ${name% -> *} ${name#* -> } $arg" ;;
    esac
    want+="$line"$'\n'
done <<<"$table"
want=$(sort <<<"$want" | sed '/^$/d')

# --- the broker, through the documented commands ---
live_exchanges=$(admin -f raw_json list exchanges name type durable |
    jq -r '.[] | select(.name != "" and (.name | startswith("amq.") | not))
           | "exchange \(.name) \(.type) durable=\(.durable)"')
live_queues=$(admin -f raw_json list queues name arguments durable exclusive auto_delete |
    jq -r ".[] | \"queue \(.name) durable=\(.durable) exclusive=\(.exclusive) auto_delete=\(.auto_delete) \(.arguments | $args_jq)\"")
live_bindings=$(admin -f raw_json list bindings source destination destination_type routing_key |
    jq -r '.[] | select(.source != "" and .destination_type == "queue")
           | "binding \(.source) \(.destination) \(.routing_key)"')
live=$(printf '%s\n%s\n%s\n' "$live_exchanges" "$live_queues" "$live_bindings" | sed '/^$/d' | sort)
if [ "$want" != "$live" ]; then
    fail "docs/rabbitmq.md's topology table is not the live broker (< the table, > the broker):
$(diff <(echo "$want") <(echo "$live") | grep '^[<>]' || true)"
fi
log "table matches the broker: $(wc -l <<<"$live") objects"

# The executor's row: the name and type it declares (events.exchange; topo_declare_events).
run_warren config config check
assert_contains "$RUN_OUT" 'events.exchange                                = "attune.events"'
assert_eq "exchange attune.events topic, durable" "$(sed '/^$/d' <<<"$executor_rows")" \
    "the events exchange's row"

# rabbitmqctl shows the same arguments from the node.
rmq_args=$(rmq list_queues -p "$vhost" name arguments --formatter json |
    jq -c '.[] | select(.name == "attune.dlx.queue") | .arguments')
assert_contains "$rmq_args" '"x-dead-letter-routing-key"' "rabbitmqctl list_queues name arguments"
assert_contains "$rmq_args" '"attune.dlx.parking"' "rabbitmqctl list_queues name arguments"

# get with ackmode=reject_requeue_true shows a message's properties and leaves it in the queue.
admin publish exchange=amq.default routing_key=attune.dlx.parking payload='{"doc":1}' \
    properties='{"type":"ExecutionRequested","app_id":"warren-executor","headers":{"attempt":2}}' >/dev/null
got=$(admin -f raw_json get queue=attune.dlx.parking count=5 ackmode=reject_requeue_true)
assert_eq 'ExecutionRequested warren-executor 2 {"doc":1}' \
    "$(jq -r '.[0] | "\(.properties.type) \(.properties.app_id) \(.properties.headers.attempt) \(.payload)"' <<<"$got")" \
    "get -f raw_json shows the properties"
again=$(admin -f raw_json get queue=attune.dlx.parking count=5 ackmode=reject_requeue_true)
assert_eq 1 "$(jq length <<<"$again")" "the message is still in the queue after get"

pass
