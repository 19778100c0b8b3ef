/*
 * Retry policies (docs/retries.md): what a policy says, how its text forms are read, and the one
 * decision every place that ends an attempt takes (results, the dead-letter handler, the
 * monitor): retry after a delay, or let the attempt's status stand. Pure: no clock, no database;
 * the caller supplies the random numbers.
 *
 * A policy comes from the configuration (the retry.* keys are the default policy, the key
 * `actions` overrides fields per action), and a submission may override max_attempts and
 * retry_on (and ask for a fallback when its pinned worker is lost).
 */
#ifndef WARREN_RETRY_H
#define WARREN_RETRY_H

#include <stdio.h>
#include "warren/common.h"

/* How an attempt ended, as the decision sees it. */
typedef enum {
    OUTCOME_COMPLETED = 0,
    OUTCOME_TEMPFAIL,    /* exit code 75 (EX_TEMPFAIL), WARREN_HANDLER_TEMPFAIL in-process */
    OUTCOME_FAILED,      /* any other failure */
    OUTCOME_TIMEOUT,     /* the handler ran past its timeout, or no result within it */
    OUTCOME_WORKER_LOST, /* dispatch expired in its queue, worker stale, offline or restarted */
    OUTCOME_CANCELLED,   /* never retried */
    OUTCOME_COUNT
} attempt_outcome_t;

/* retry_on bits. `failed` means any failure, so it includes tempfail. */
#define RETRY_ON_TEMPFAIL 1u
#define RETRY_ON_FAILED 2u
#define RETRY_ON_TIMEOUT 4u
#define RETRY_ON_WORKER_LOST 8u

typedef enum { BACKOFF_EXPONENTIAL = 0, BACKOFF_POLYNOMIAL } retry_backoff_t;
typedef enum { JITTER_FULL = 0, JITTER_PERCENT, JITTER_NONE } retry_jitter_t;

#define RETRY_MAX_ATTEMPTS 1000
#define RETRY_MAX_DELAY_MS (30LL * 86400 * 1000)
#define RETRY_NEVER_MAX 512

typedef struct retry_policy {
    int max_attempts; /* counts the first; 1: never retried */
    int backoff;      /* retry_backoff_t */
    int64_t base_ms;  /* exponential: the first retry's delay */
    int factor;       /* exponential: growth per attempt */
    int64_t max_ms;   /* no delay (before jitter) exceeds this */
    int jitter;       /* retry_jitter_t */
    int jitter_pct;   /* JITTER_PERCENT: +- this percentage */
    unsigned retry_on;
    char never[RETRY_NEVER_MAX]; /* error types never retried, "a,b,c" */
    /* Not a retry field: actions.<ref>.queue_timeout_s, the longest an execution may wait from
     * its due time before a worker starts it (docs/flow-control.md); 0: no deadline. */
    int queue_timeout_s;
} retry_policy_t;

/* The longest queue_timeout_s (the column's check, schema 035): 366 days. */
#define QUEUE_TIMEOUT_MAX_S (366 * 86400)

/* The built-in default policy (what the retry.* keys default to). */
void retry_policy_default(retry_policy_t *p);

/* Words of the outcomes ("completed", "tempfail", ...) and the retry_on words. */
const char *retry_outcome_name(attempt_outcome_t o);
/* "tempfail,worker_lost" into bits; -1 with why for an unknown word or an empty list. */
int retry_on_parse(const char *list, unsigned *bits, char *why, size_t whylen) WARN_UNUSED;
/* The bits as "tempfail,worker_lost" ("" for none). */
void retry_on_text(unsigned bits, char *buf, size_t len);
/* Checkers of the configuration's text keys (config_table.c): -1 with why. */
int retry_on_check(const char *list, char *why, size_t whylen);
int retry_jitter_check(const char *spec, char *why, size_t whylen);
int retry_never_check(const char *list, char *why, size_t whylen);
/* "full", "none" or "N%" (1..100) into the policy. */
int retry_jitter_parse(const char *spec, retry_policy_t *p, char *why, size_t whylen) WARN_UNUSED;

/* Set one field of p by its name as written in the configuration (max_attempts, backoff,
 * base_ms, factor, max_ms, jitter, retry_on, never_retry; and queue_timeout_s) from text; -1
 * with why. */
int retry_policy_set(retry_policy_t *p, const char *field, const char *value, char *why,
                     size_t whylen) WARN_UNUSED;
/* Names of the fields, NULL-terminated. */
extern const char *const retry_policy_fields[];
/* The policy as one line "max_attempts=3 backoff=exponential ..." (config check, docs). */
void retry_policy_text(const retry_policy_t *p, char *buf, size_t len);

/*
 * The key `actions`, as text: "ACTION: field=value field=value; ACTION: ...", e.g.
 * "core.fail: max_attempts=3 retry_on=tempfail,timeout; reports.build: backoff=polynomial".
 * retry_actions_check validates a spec ("" is valid). retry_policy_for starts from dflt and
 * applies the fields the spec lists for action (the last entry naming it wins).
 */
int retry_actions_check(const char *spec, char *why, size_t whylen);
int retry_policy_for(const char *spec, const char *action, const retry_policy_t *dflt,
                     retry_policy_t *out) WARN_UNUSED;
/* Calls fn for each action the spec names, in order (config check prints each policy). */
void retry_actions_each(const char *spec, void (*fn)(const char *action, size_t len, void *arg),
                        void *arg);

/* Delay before retry number `attempt` (the attempt that just ended is `attempt`, 1-based),
 * before jitter: exponential min(base * factor^(attempt-1), max); polynomial min(attempt^4 s,
 * max). */
int64_t retry_base_delay_ms(const retry_policy_t *p, int attempt);
/* The delay with the policy's jitter, unit_random in [0, 1): full: [0, d]; N%: d +- N%. */
int64_t retry_jittered_ms(const retry_policy_t *p, int64_t d, double unit_random);

typedef enum {
    RETRY_NO_FAILURE = 0, /* completed: nothing to decide */
    RETRY_AGAIN,          /* a new attempt after delay_ms */
    RETRY_NOT_RETRYABLE,  /* the outcome is not in retry_on (or the policy allows 1 attempt) */
    RETRY_NEVER,          /* the error type is listed in never_retry */
    RETRY_EXHAUSTED,      /* retryable, but max_attempts are used up */
    RETRY_CANCELLED       /* cancelled: never retried */
} retry_verdict_t;

typedef struct retry_decision {
    retry_verdict_t verdict;
    int64_t delay_ms; /* RETRY_AGAIN: the delay applied (jitter included) */
} retry_decision_t;

/* The word of a verdict (attempt records: "retry", "exhausted", ...). */
const char *retry_verdict_name(retry_verdict_t v);

/*
 * The decision. policy_attempt: which attempt of the policy just ended (1 for the first;
 * manual retries do not count). error_type: the failure's type (NULL or "" when none), matched
 * against never_retry. unit_random supplies numbers in [0, 1) (called once, for RETRY_AGAIN).
 */
retry_decision_t retry_decide(const retry_policy_t *p, int policy_attempt, attempt_outcome_t o,
                              const char *error_type, double (*unit_random)(void *), void *ctx);

/* An error's type: the word before the first ':' of the error text when it is one (letters,
 * digits, '_', '.', '-'; at most 63), e.g. "ValueError: bad input" -> "ValueError"; "" else. */
void retry_error_type(const char *error, char *buf, size_t len);

/* ---- from the configuration (src/common/retry_config.c) -------------------------------------- */
struct warren_config;
/* The default policy (the retry.* keys). */
void retry_policy_default_of(const struct warren_config *cfg, retry_policy_t *p);
/* The policy of action: the default with the fields the key `actions` sets for it. */
void retry_policy_of(const struct warren_config *cfg, const char *action, retry_policy_t *p);
/* Each submission of rows (q_submit's JSON array) that gives no queue_timeout_s gets its
 * action's actions.<ref>.queue_timeout_s, when that is set. */
struct json_object;
void retry_fill_queue_timeouts(const struct warren_config *cfg, struct json_object *rows);
/* Each action the key `actions` names with its limits, as JSON text {"REF": {"queue_timeout_s":
 * N or null}} (q_actions' $1); malloc'd, NULL without memory. */
char *retry_action_limits_json(const struct warren_config *cfg);
/* `warren config check`: one line per policy, the default's and each listed action's. */
void retry_policies_print(const struct warren_config *cfg, FILE *out);

#endif
