# Helpers for tests of the executor's HTTP API; source after common.sh, topology.sh and
# executor.sh. curl is the client: what an operator would type.
# shellcheck shell=bash

API_WRITE_KEY=write-key-$RANDOM$RANDOM-0123456789
API_READ_KEY=read-key-$RANDOM$RANDOM-0123456789

# Every answer `call` receives is kept, one line each (METHOD, PATH, STATUS, CONTENT_TYPE and the
# body without its line breaks, separated by tabs), in WARREN_API_CAPTURE/TEST_NAME.tsv (default
# build/api-answers; empty: none): tests/integration/api_contract.sh checks them against
# docs/openapi.json. A JSON text holds no line break or tab inside a string, so the body stays
# the same JSON.
API_CAPTURE_FILE=
if [ -n "${WARREN_API_CAPTURE-$WARREN_BUILD_DIR/api-answers}" ]; then
    mkdir -p "${WARREN_API_CAPTURE-$WARREN_BUILD_DIR/api-answers}"
    API_CAPTURE_FILE=${WARREN_API_CAPTURE-$WARREN_BUILD_DIR/api-answers}/$TEST_NAME.tsv
    : >"$API_CAPTURE_FILE"
fi

# api_keys_file: a keys file (0600) with "ops" (admin: every route) and "viewer" (read); sets
# API_KEYS_FILE. tests/integration/api_scopes.sh tries the scopes between them.
api_keys_file() {
    API_KEYS_FILE="$TEST_TMP/api.keys"
    (umask 077 && printf '# test keys\nops admin %s\nviewer read %s\n' "$API_WRITE_KEY" \
        "$API_READ_KEY" >"$API_KEYS_FILE")
}

# api_start NAME: an executor with the keys of api_keys_file and reads needing a key, on a port
# of its own; sets API (http://127.0.0.1:PORT) and EXEC_PID.
api_start() {
    api_keys_file
    export WARREN__API__KEYS_FILE=$API_KEYS_FILE WARREN__API__AUTH_READS=true
    export WARREN__LOG__FORMAT=json
    exec_start "$1"
    API="http://127.0.0.1:$(http_port "$1")"
}

# call METHOD PATH [BODY] [KEY]: the request with curl; prints "CODE BODY" (body on one line).
# KEY "-" sends none. A body is sent as application/json unless CALL_TYPE says otherwise;
# CALL_HEADER ("Name: value") adds a header.
call() {
    local method=$1 path=$2 body=${3:-} key=${4:-$API_WRITE_KEY} args=()
    [ "$key" = - ] || args+=(-H "Authorization: Bearer $key")
    [ -z "${CALL_HEADER:-}" ] || args+=(-H "$CALL_HEADER")
    if [ -n "$body" ]; then
        args+=(-H "Content-Type: ${CALL_TYPE:-application/json}" --data-binary "$body")
    fi
    curl -sS --max-time 20 -o "$TEST_TMP/call.body" -w '%{http_code} %{content_type}' \
        -X "$method" "${args[@]}" "$API$path" >"$TEST_TMP/call.code" ||
        echo 000 >"$TEST_TMP/call.code"
    local code ctype answer
    read -r code ctype <"$TEST_TMP/call.code" || true
    # Builtins only: a fork per call slows the tests that race the executor's timers.
    IFS= read -r -d '' answer <"$TEST_TMP/call.body" || true
    answer=${answer//$'\n'/}
    if [ -n "$API_CAPTURE_FILE" ] && [ "$code" != 000 ]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$method" "$path" "$code" "${ctype:-}" "$answer" \
            >>"$API_CAPTURE_FILE"
    fi
    printf '%s %s\n' "$code" "$answer"
}

# expect CODE METHOD PATH [BODY] [KEY]: call, check the status, leave the body in CALL_BODY. An
# error answer must be the JSON {"error", "detail"}.
expect() {
    local want=$1 got
    shift
    got=$(call "$@")
    CALL_BODY=${got#* }
    assert_eq "$want" "${got%% *}" "$1 $2 status (body: ${CALL_BODY:0:300})"
    if [ "$want" -ge 400 ]; then
        jq -e '(.error | type) == "string" and (.detail | type) == "string"' <<<"$CALL_BODY" >/dev/null ||
            fail "$1 $2: the error answer is not {error, detail}: ${CALL_BODY:0:300}"
    fi
}

# redrive_records QUEUE N ACTION [WORKER]: N failed executions of ACTION (worker WORKER, default
# "w"), each with a pending record from QUEUE, deleted when the test ends.
redrive_records() {
    psql_q "with e as (insert into executions (action_ref, status, worker, attempt)
                select '$3', 'failed', '${4:-w}', 1 from generate_series(1, $2) returning id)
            insert into dead_letters (dedup_key, execution_id, reason, queue, headers, body)
            select '$1/' || e.id, e.id, 'expired', '$1', '{}', '\\x7b7d' from e" >/dev/null
    on_exit "psql_q \"delete from dead_letters where queue = '$1'\" >/dev/null"
}

# task_field TASK FIELD: one field of a bulk redrive task (a jq path: outcomes.completed).
task_field() {
    call GET "/api/v1/redrive-tasks/$1" | cut -d' ' -f2- | jq -r ".$2"
}
