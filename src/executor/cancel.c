/*
 * Cancelling an execution (docs/executor.md, "Cancel"): the control message, and sending it
 * again (the request itself is api_cancel.c). requested and scheduled become
 * cancelled at once; running becomes canceling and its worker is told with a control message
 * (ExecutionCancelRequested, confirmed and mandatory, key execution.cancel.worker.{id}) on its
 * control queue. A message nobody receives (returned: no worker process is listening) leaves
 * the row canceling; the monitor sends it again each round while the worker is live, and
 * settles the row as cancelled once the worker is gone (monitor.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor/cancel.h"
#include "warren/db.h"
#include "warren/envelope.h"
#include "warren/exec_status.h"
#include "warren/log.h"
#include "warren/queries.h"
#include "warren/topology.h"

#define CANCEL_RESEND_BATCH 100

int cancel_publish(cancel_sender_t *c, const char *id, int64_t execution_id, int attempt,
                   const char *worker, const char *by)
{
    char key[128], message_id[40]; /* a worker id is at most 64 characters */
    cancel_request_t req = {.execution_id = execution_id, .attempt = attempt};
    snprintf(req.worker_id, sizeof req.worker_id, "%s", worker);
    snprintf(req.requested_by, sizeof req.requested_by, "%s", by);
    if (topo_cancel_key(worker, key, sizeof key) != 0) {
        log_kv(LOG_WARN, "cancel not sent: not a valid worker id", "execution_id", id, "worker",
               worker, NULL);
        c->stats->cancel_messages_failed++;
        return MQ_ERR_CONNECTION;
    }
    json_object *payload = cancel_to_payload(&req);
    size_t len = 0;
    char *body = NULL;
    if (envelope_new_id(message_id, sizeof message_id) == 0) /* else logged */
        body = envelope_encode(MSG_EXECUTION_CANCEL_REQUESTED, message_id, id, "executor", attempt,
                               NULL, payload, &len);
    else
        json_object_put(payload);
    if (!body)
        return MQ_ERR_CONNECTION;
    mq_message_t m = {.exchange = c->cfg->rabbitmq.exchanges.executions,
                      .routing_key = key,
                      .body = body,
                      .body_len = len,
                      .message_id = message_id,
                      .correlation_id = id,
                      .type = msg_type_name(MSG_EXECUTION_CANCEL_REQUESTED),
                      .execution_id = id,
                      .mandatory = true};
    int rc = mq_publish(c->pub, &m);
    free(body);
    if (rc == MQ_OK)
        c->stats->cancel_messages++;
    else
        c->stats->cancel_messages_failed++;
    log_kv(rc == MQ_OK ? LOG_INFO : LOG_WARN,
           rc == MQ_OK ? "cancel sent to the worker" : "cancel not delivered to the worker",
           "execution_id", id, "worker", worker, "status", mq_status_name(rc), NULL);
    return rc;
}

/* clang-format off */
/* Canceling rows on live workers, told longer ago than a monitor round. */
static const char pending_sql[] =
    "SELECT e.id, e.attempt, e.worker, coalesce(e.cancelled_by, '') FROM executions e"
    " JOIN workers w ON w.id = e.worker"
    " WHERE e.status = " EXEC_SQL(CANCELING)
    " AND e.cancel_requested_at < now() - make_interval(secs => $2::int)"
    " AND w.status <> 'offline' AND warren_worker_fresh(w, $1::int)"
    " ORDER BY e.id LIMIT 100";
/* clang-format on */

typedef struct pending {
    const char *const *params;
    PGresult *res;
} pending_t;

static int pending_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    pending_t *p = arg;
    return db_exec(db, pending_sql, 2, p->params, &p->res, err, errlen);
}

void cancel_resend(cancel_sender_t *c)
{
    char factor[16], age[16];
    snprintf(factor, sizeof factor, "%d", c->cfg->executor.heartbeat_stale_factor);
    int monitor_s = c->cfg->executor.monitor_interval_s;
    snprintf(age, sizeof age, "%d", monitor_s > 0 ? monitor_s : 1);
    const char *params[] = {factor, age};
    pending_t p = {.params = params};
    if (dbc_transaction(c->db, "finding cancels to send again", pending_fn, &p) != DBC_OK) {
        PQclear(p.res);
        return;
    }
    for (int i = 0; i < PQntuples(p.res) && i < CANCEL_RESEND_BATCH; i++)
        (void)cancel_publish(c, PQgetvalue(p.res, i, 0), strtoll(PQgetvalue(p.res, i, 0), NULL, 10),
                             atoi(PQgetvalue(p.res, i, 1)), PQgetvalue(p.res, i, 2),
                             PQgetvalue(p.res, i, 3));
    PQclear(p.res);
}
