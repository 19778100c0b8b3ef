/* The worker's intake: check each dispatch, recognise redeliveries, start executions in turn. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warren/action_timeouts.h"
#include "warren/log.h"
#include "warren/signing.h"
#include "warren/timestamp.h"
#include "worker/worker_internal.h"

/* Acks and nacks are best effort: when they fail the channel is gone and the broker has
 * requeued the delivery, which then comes back and is handled again. */
static void settle(worker_t *w, uint64_t tag, bool ack, bool requeue, const char *execution_id)
{
    int rc = ack ? mq_ack(w->consumer, tag, false) : mq_nack(w->consumer, tag, requeue);
    if (rc != MQ_OK)
        log_kv(LOG_INFO,
               ack ? "ack not sent; the broker requeued the delivery"
                   : "nack not sent; the broker requeued the delivery",
               "worker", w->id, "execution_id", execution_id, "status", mq_status_name(rc), NULL);
}

/* Dead-letter it: nack without requeue sends it to the DLX, where the executor stores it. */
static void reject(worker_t *w, const mq_delivery_t *d, const char *why)
{
    char *id = mq_header_string(&d->headers, "execution_id"); /* as the publisher labelled it */
    w->stats.rejected++;
    log_kv(LOG_WARN, "dispatch rejected; dead-lettered", "worker", w->id, "reason", why,
           "message_id", d->message_id, "execution_id", id, "routing_key", d->routing_key,
           "redelivered", d->redelivered ? "true" : "false", NULL);
    settle(w, d->delivery_tag, false, false, id);
    free(id);
}

static int parse(worker_t *w, const mq_delivery_t *d, envelope_t *e, dispatch_t *disp, char *why,
                 size_t len)
{
    if (subscriber_decode(d, MSG_EXECUTION_REQUESTED, e, why, len) != 0 ||
        dispatch_from_payload(e->payload, disp, why, len) != 0)
        return -1;
    return subscriber_addressed(w, "dispatch", disp->worker_id, why, len);
}

/* The same execution and attempt is already here: never run it twice. */
static void duplicate(worker_t *w, execs_record_t *x, const mq_delivery_t *d)
{
    char id[IDS_EXECUTION_ID_TEXT];
    ids_execution_id_text(x->execution_id, id, sizeof id);
    w->stats.duplicates++;
    if (x->running_reported) {
        log_kv(LOG_INFO, "dispatch of an execution already running here: acked, not run again",
               "worker", w->id, "execution_id", id, "redelivered",
               d->redelivered ? "true" : "false", NULL);
        settle(w, d->delivery_tag, true, false, id);
    } else if (execs_add_tag(x, d->delivery_tag) != 0) {
        settle(w, d->delivery_tag, false, true, id); /* out of memory: let it come back */
    } else {
        log_kv(LOG_INFO, "dispatch of an execution already here: acked once it is reported running",
               "worker", w->id, "execution_id", id, "redelivered",
               d->redelivered ? "true" : "false", NULL);
    }
}

/* A held record for the dispatch; kept (taken over) makes it a repeat of finished work, to be
 * answered with that completion instead of being run. */
static int hold(worker_t *w, const mq_delivery_t *d, const envelope_t *e, const dispatch_t *disp,
                report_msg_completion_t *kept, size_t kept_bytes)
{
    execs_record_t *x = execs_add(&w->execs, disp->execution_id, disp->attempt);
    if (!x) {
        free(kept);
        return -1;
    }
    x->kept = kept;
    x->kept_bytes = kept_bytes;
    size_t n = 2;
    const char *params = "{}";
    if (disp->params)
        params = json_object_to_json_string_length(
            disp->params, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    if (!params || execs_set_params(x, params, n) != 0 || execs_add_tag(x, d->delivery_tag) != 0) {
        execs_remove(&w->execs, x, false); /* a kept completion goes back to the recent keys */
        return -1;
    }
    x->owner = w;
    x->timeout_s = disp->timeout_s;
    x->start_deadline_us = disp->start_deadline_us;
    snprintf(x->action_ref, sizeof x->action_ref, "%s", disp->action_ref);
    snprintf(x->trace_id, sizeof x->trace_id, "%s", e->trace_id);
    return 0;
}

/*
 * The dispatch of an execution that finished here (the database lost the commit of its
 * completion and the executor dispatched it again, or the ack of a redelivery was lost). It is
 * not run again: its completion is sent again when its turn comes (intake_start_held), and that
 * confirmation acks the dispatch, so the executor converges instead of waiting on a row that
 * nothing will ever report. When the completion was no longer kept (the memory bound), it is
 * run again: an ack alone would leave the row scheduled until its timeout fails work that
 * succeeded, while a second run is reported and the executor's attempt fence keeps the first
 * completion it applied.
 */
static void finished_before(worker_t *w, report_msg_completion_t **kept, const char *id)
{
    w->stats.duplicates++;
    if (*kept) {
        log_kv(LOG_INFO,
               "dispatch of an execution this worker already finished: not run again, its "
               "completion is sent again",
               "worker", w->id, "execution_id", id, NULL);
        return;
    }
    w->stats.reruns++;
    log_kv(LOG_WARN,
           "dispatch of an execution this worker finished, whose completion is no longer kept: "
           "run again",
           "worker", w->id, "execution_id", id, NULL);
}

static void accept_dispatch(worker_t *w, const mq_delivery_t *d, const envelope_t *e,
                            const dispatch_t *disp)
{
    char id[IDS_EXECUTION_ID_TEXT];
    report_msg_completion_t *kept = NULL;
    size_t kept_bytes = 0;
    ids_execution_id_text(disp->execution_id, id, sizeof id);
    execs_record_t *x = execs_find(&w->execs, disp->execution_id, disp->attempt);
    if (x) {
        duplicate(w, x, d);
        return;
    }
    if (execs_recent_take(&w->execs, disp->execution_id, disp->attempt, &kept, &kept_bytes))
        finished_before(w, &kept, id);
    if (hold(w, d, e, disp, kept, kept_bytes) != 0) {
        log_kv(LOG_ERROR, "out of memory accepting a dispatch; requeued", "worker", w->id,
               "execution_id", id, NULL);
        settle(w, d->delivery_tag, false, true, id);
    }
}

void intake_delivery(worker_t *w, mq_delivery_t *d)
{
    envelope_t e;
    dispatch_t disp;
    char why[ERRBUF_SIZE];
    w->stats.deliveries++;
    if (w->phase != PHASE_RUNNING) {
        /* Shutting down: another worker incarnation or the queue's TTL takes it (a requeued
         * message keeps its original expiry). */
        w->stats.requeued++;
        settle(w, d->delivery_tag, false, true, NULL);
        mq_free_delivery(w->consumer, d);
        return;
    }
    if (sign_check(d, why, sizeof why) != 0) { /* never run: the executor did not send it */
        w->stats.bad_signatures++;
        reject(w, d, why);
        mq_free_delivery(w->consumer, d);
        return;
    }
    if (parse(w, d, &e, &disp, why, sizeof why) != 0) {
        reject(w, d, why);
        envelope_free(&e);
    } else {
        accept_dispatch(w, d, &e, &disp);
        envelope_free(&e);
    }
    mq_free_delivery(w->consumer, d);
}

static void on_done(const runner_result_t *r, void *arg)
{
    execs_record_t *x = arg;
    worker_t *w = x->owner;
    char ended_at[40], id[IDS_EXECUTION_ID_TEXT], ms[24], code[16];
    ts_now(ended_at, sizeof ended_at);
    ids_execution_id_text(x->execution_id, id, sizeof id);
    snprintf(ms, sizeof ms, "%" PRId64, r->duration_ms);
    snprintf(code, sizeof code, "%d", r->exit_code);
    if (r->outcome == RUNNER_COMPLETED)
        w->stats.completed++;
    else if (r->outcome == RUNNER_TIMEOUT)
        w->stats.timed_out++;
    else if (r->outcome == RUNNER_CANCELLED)
        w->stats.cancelled++;
    else
        w->stats.failed++;
    health_observe(w, x->action_ref, r->duration_ms);
    log_kv(LOG_INFO, "execution finished", "worker", w->id, "execution_id", id, "action_ref",
           x->action_ref, "outcome", runner_outcome_name(r->outcome), "exit_code", code,
           "duration_ms", ms, "error", r->error, NULL);
    execs_set_stage(&w->execs, x, STAGE_FINISHED);
    reporter_completion(w, x, r, ended_at);
    worker_kick_soon(w);
}

static void start(worker_t *w, execs_record_t *x)
{
    char id[IDS_EXECUTION_ID_TEXT], err[ERRBUF_SIZE], timeout[16];
    ids_execution_id_text(x->execution_id, id, sizeof id);
    /* The submission's timeout, else the action's configured one, else the worker default
     * (none when that is 0): the one the runner applies, and the running status reports. */
    if (x->timeout_s <= 0)
        x->timeout_s = action_timeouts_lookup(w->o.cfg->worker.action_timeouts, x->action_ref);
    if (x->timeout_s <= 0)
        x->timeout_s = w->o.runner.default_timeout_s > 0 ? w->o.runner.default_timeout_s : 0;
    runner_spec_t spec = {
        .execution_id = x->execution_id,
        .action_ref = x->action_ref,
        .params_json = x->params,
        .params_len = x->params_len,
        .attempt = x->attempt,
        .timeout_s = x->timeout_s,
        .traceparent = x->trace_id,
    };
    ts_now(x->started_at, sizeof x->started_at);
    /* Set before runner_start: an in-process handler's result arrives from the loop later,
     * but the state must already say running. */
    execs_set_stage(&w->execs, x, STAGE_RUNNING);
    if (runner_start(w->runner, &spec, on_done, x, err, sizeof err) != 0) {
        log_kv(LOG_ERROR, "cannot start execution; dead-lettered", "worker", w->id, "execution_id",
               id, "error", err, NULL);
        w->stats.rejected++;
        for (size_t i = 0; i < x->n_tags; i++)
            settle(w, x->tags[i], false, false, id);
        execs_remove(&w->execs, x, false);
        return;
    }
    w->stats.started++;
    snprintf(timeout, sizeof timeout, "%d", x->timeout_s);
    log_kv(LOG_INFO, "execution started", "worker", w->id, "execution_id", id, "action_ref",
           x->action_ref, "timeout_s", timeout, NULL);
    reporter_running(w, x);
}

/* Room for x: a free slot, and room in the outbox for its two reports, those of every running
 * execution and one for each other held one (its cancel or its repeated completion is
 * reported), so a report never finds the outbox full. A repeat needs no slot and only its
 * completion's room. */
static bool room_for(const worker_t *w, const execs_record_t *x)
{
    size_t running = runner_running(w->runner);
    size_t held = execs_count(&w->execs, STAGE_HELD); /* x included */
    size_t others = held > 0 ? held - 1 : 0;
    if (x->kept)
        return w->outbox.len + 2 * running + 1 + others <= w->outbox.cap;
    return running < (size_t)w->o.max_concurrency &&
           w->outbox.len + 2 * (running + 1) + others <= w->outbox.cap;
}

/* A repeated dispatch of finished work: its completion again. */
static void answer_repeat(worker_t *w, execs_record_t *x)
{
    char id[IDS_EXECUTION_ID_TEXT];
    ids_execution_id_text(x->execution_id, id, sizeof id);
    if (reporter_repeat(w, x) != 0) {
        log_kv(LOG_ERROR, "out of memory sending a completion again; dispatch requeued", "worker",
               w->id, "execution_id", id, NULL);
        for (size_t i = 0; i < x->n_tags; i++)
            settle(w, x->tags[i], false, true, id);
        execs_remove(&w->execs, x, true);
        return;
    }
    w->stats.repeats++;
    execs_set_stage(&w->execs, x, STAGE_FINISHED); /* its confirmation acks the dispatch */
}

/* While reports fail nothing new starts: work whose status cannot reach the executor would
 * only be wasted, and its dispatch stays safely unacked meanwhile. Failing means the outbox is
 * waiting to retry (its timer kicks again), or the publisher's breaker is open, say from failed
 * heartbeats (then the same timer is armed for when it admits a probe). */
static bool reports_flow(worker_t *w)
{
    if (w->outbox.failing)
        return false;
    int64_t wait = mq_retry_in_ms(w->publisher);
    if (wait <= 0)
        return true;
    if (!evtimer_pending(&w->ev_retry, NULL))
        (void)evloop_arm(&w->ev_retry, wait);
    return false;
}

/*
 * The executor fails a dispatch that nobody started by its start deadline (it is held here while
 * the outbox fails or a burst is over capacity, or it waited in the queue): starting it later
 * would run work whose execution is already failed, or will be. Dead-letter it instead; the
 * executor records it (x-death reason rejected). Repeats are answered anyway: they start
 * nothing, and their completion is the truth.
 */
static void drop_past_deadline(worker_t *w)
{
    int64_t now_us = now_wall_ms() * 1000;
    execs_record_t *x = w->execs.head;
    while (x) {
        execs_record_t *next = x->next;
        if (x->stage == STAGE_HELD && !x->kept && x->start_deadline_us != 0 &&
            now_us > x->start_deadline_us) {
            char id[IDS_EXECUTION_ID_TEXT], deadline[TS_TEXT_MAX];
            ids_execution_id_text(x->execution_id, id, sizeof id);
            ts_format(x->start_deadline_us, deadline, sizeof deadline);
            w->stats.past_deadline++;
            log_kv(LOG_WARN, "start deadline passed before the dispatch could start; dead-lettered",
                   "worker", w->id, "execution_id", id, "start_deadline", deadline, NULL);
            for (size_t i = 0; i < x->n_tags; i++)
                settle(w, x->tags[i], false, false, id);
            execs_remove(&w->execs, x, false);
        }
        x = next;
    }
}

size_t intake_start_held(worker_t *w)
{
    execs_record_t *x;
    size_t started = 0;
    if (execs_count(&w->execs, STAGE_HELD) > 0)
        drop_past_deadline(w);
    while (w->phase == PHASE_RUNNING && (x = execs_first_held(&w->execs)) != NULL &&
           room_for(w, x) && reports_flow(w)) {
        if (x->kept) {
            answer_repeat(w, x);
            continue;
        }
        start(w, x);
        started++;
    }
    return started;
}

void intake_cancel_held(worker_t *w, execs_record_t *x)
{
    runner_result_t r = {
        .execution_id = x->execution_id,
        .action_ref = x->action_ref,
        .outcome = RUNNER_CANCELLED,
        .exit_code = -1,
        .stderr_tail = "",
        .error = "Cancelled by request",
    };
    on_done(&r, x); /* never started: no started_at, and its completion acks the dispatch */
}

void intake_requeue_held(worker_t *w)
{
    execs_record_t *x;
    while ((x = execs_first_held(&w->execs)) != NULL) {
        char id[IDS_EXECUTION_ID_TEXT];
        ids_execution_id_text(x->execution_id, id, sizeof id);
        for (size_t i = 0; i < x->n_tags; i++) {
            w->stats.requeued++;
            settle(w, x->tags[i], false, true, id);
        }
        log_kv(LOG_INFO, "dispatch not started; requeued", "worker", w->id, "execution_id", id,
               NULL);
        execs_remove(&w->execs, x, false);
    }
}

void intake_forget_deliveries(worker_t *w)
{
    execs_record_t *x = w->execs.head;
    while (x) {
        execs_record_t *next = x->next;
        x->n_tags = 0;
        if (x->stage == STAGE_HELD) {
            w->stats.dropped_held++;
            execs_remove(&w->execs, x, false);
        }
        x = next;
    }
}
