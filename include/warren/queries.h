/*
 * Statements the CLI (on the database URL) and the executor's HTTP API both run, so that
 * `warren get|list|workers|submit|cancel --json` print the same document whichever way they
 * go. Every value is a parameter; each statement returns one row (or none) whose "doc" column
 * is the JSON text. src/db/queries.c.
 */
#ifndef WARREN_QUERIES_H
#define WARREN_QUERIES_H

/* One execution: the row, its derived wait_reason, "events" (its history), "dead_letters" and
 * "attempts" (every attempt that ended, execution_attempts).
 * $1 id, $2 executor.heartbeat_stale_factor. No row: no such execution. */
extern const char q_execution_doc[];

/* Executions newest first (by id, which increases with created_at), as a JSON array "doc",
 * with "last_id" (the smallest id in the page, the next page's cursor) and "n".
 * $1 status, $2 action_ref, $3 worker, $4 created since (timestamptz text), $5 ids below this
 * (the cursor), $6 limit; NULL for any filter means none. */
extern const char q_execution_list[];

/* Every known worker as a JSON array "doc": the row, "live", "state" (live, stale, offline),
 * "heartbeat_age_s" and "in_flight". $1 executor.heartbeat_stale_factor. */
extern const char q_workers[];

/* Insert executions in one statement: $1 a JSON array of {action_ref, params, pinned_worker,
 * timeout_s, retry_max_attempts, retry_on, fallback} (checked by the caller), $2 submitted_by. One row per execution, in input order:
 * id, status, row (the new row as JSON text). Each element may also carry priority, and run_at
 * (RFC 3339, ts_format_us) or delay_s: its due_at (docs/flow-control.md). */
extern const char q_submit[];

/* A submission's priority (schema 033): the scheduler claims the highest first. */
#define Q_PRIORITY_MIN 0
#define Q_PRIORITY_MAX 9
#define Q_PRIORITY_DEFAULT 5
/* The longest delay_s (warren submit --in) accepted: one year. */
#define Q_DELAY_MAX_S (366 * 86400)
#define Q_STR_(x) #x
#define Q_STR(x) Q_STR_(x) /* a number's text in a statement */
/* The priority and the due_at of a submission row r (its priority, run_at, delay_s): the last
 * two values of an INSERT of q_submit's columns; src/db/idempotency.c inserts the same. */
#define Q_SUBMIT_PRIORITY_DUE(r)                                                                   \
    "coalesce(" r ".priority, " Q_STR(Q_PRIORITY_DEFAULT) "), coalesce(" r ".run_at, now() + "     \
                                                          "make_interval(secs => " r               \
                                                          ".delay_s), now())"

/*
 * Cancel execution $1 on behalf of $2 (cancelled_by): requested or scheduled become cancelled
 * at once, running becomes canceling (its worker must be told). Compare-and-swap under a row
 * lock. No row: no such execution. Else: before (the status found), after (the status now),
 * worker, attempt and row (JSON text of the row now).
 */
extern const char q_cancel[];

/*
 * Retry execution $1 by hand (`warren retry`, POST /api/v1/executions/{id}/retry): failed,
 * timeout and abandoned become requested at once, as a manual attempt that does not count
 * against the retry policy. Compare-and-swap on the status and attempt under a row lock. No row:
 * no such execution. Else: before, after (requested when it was retried), attempt (the one that
 * ended) and row (JSON text of the row now). retry_refusal() says why another status is refused.
 */
extern const char q_retry[];
/* Why a manual retry of an execution in status `before` changes nothing (NULL: it can). */
const char *retry_refusal(const char *before);

/*
 * Actions (docs/flow-control.md, "Pausing an action") as a JSON array "doc", by action_ref:
 * every action the configuration names, a worker (not retired) offers, has non-terminal
 * executions or is paused; each with "configured", "limits" (queue_timeout_s), "counts" of its
 * non-terminal executions by status, "paused", "paused_by" and "paused_at". $1: the configured
 * limits, retry_action_limits_json.
 */
extern const char q_actions[];
/* Pause action $1 on behalf of $2 (schema 035's action_pauses): one row "doc", {action_ref,
 * paused, paused_by, paused_at, resumed_by, resumed_at, changed}; pausing a paused action
 * changes nothing (changed false, the pause's own who and when). */
extern const char q_action_pause[];
/* Resume action $1 on behalf of $2: the same document (paused false); changed false when it
 * was not paused. */
extern const char q_action_resume[];

/*
 * Send execution $1 to investigation by hand on behalf of $2, with notes $3 (NULL: none):
 * warren_investigate (schema/functions/180_operator_actions.sql). One row: outcome (opened,
 * not_found, ended, open), status (the execution's), record_id and doc (the new record as show
 * prints it).
 */
extern const char q_investigate[];

/*
 * Complete execution $1 by hand with result $2 (JSON text) on behalf of $3, notes $4, at attempt
 * $5 (NULL: any), with the staleness thresholds $6 (dlq_staleness_cfg) deciding whether a
 * non-terminal one is stuck: warren_complete_by_hand. One row: outcome (completed, not_found,
 * conflict), before (the status found), attempt, why (of a conflict) and row (JSON text).
 */
extern const char q_complete[];

/* Register a wait for an execution's end (schema 036) and say whether it has ended, in one
 * statement: while the registration is current, every statement that changes a status notifies
 * channel warren_ended (schema/functions/195_execution_waiters.sql says why none is missed).
 * $1 id, $2 seconds the registration lasts. One row, "ended" (boolean); none: no such
 * execution. Expired registrations are pruned on the way. */
extern const char q_wait_register[];
#define Q_WAIT_CHANNEL "warren_ended"

#endif
