/*
 * Cancelling an execution on its worker (docs/executor.md, "Cancel"): the control message
 * (ExecutionCancelRequested, confirmed and mandatory, key execution.cancel.worker.{id}), sent by
 * the API's cancel (api_cancel.c) and sent again by the monitor each round for every canceling
 * execution whose worker is live. The context lends what it uses and nothing else.
 */
#ifndef WARREN_EXECUTOR_CANCEL_H
#define WARREN_EXECUTOR_CANCEL_H

#include "executor/dbconn.h"
#include "executor/stats.h"
#include "warren/config.h"
#include "warren/mq.h"

typedef struct cancel_sender {
    const warren_config_t *cfg; /* borrowed: the exchange, executor.* */
    mq_client_t *pub;           /* borrowed: the publishing client */
    dbconn_t *db;               /* borrowed: the jobs lane (the resends' statement) */
    executor_stats_t *stats;    /* borrowed */
} cancel_sender_t;

/* The control message that tells worker to cancel execution_id (id: its text) at attempt,
 * requested by by (the contract the worker reads: cancel_from_payload, its control queue bound
 * to topo_cancel_key); MQ_OK or the mq_status_t of the failure, logged and counted. */
int cancel_publish(cancel_sender_t *c, const char *id, int64_t execution_id, int attempt,
                   const char *worker, const char *by);
/* The control message again for every canceling execution whose worker is live and was told
 * more than a monitor round ago (the monitor's last step). */
void cancel_resend(cancel_sender_t *c);

#endif
