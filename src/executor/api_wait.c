/* GET /api/v1/executions/{id}?wait_s=N: wait for the end on LISTEN warren_ended (api_wait.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "executor/api.h"
#include "executor/api_wait.h"
#include "executor/pgtext.h"
#include "warren/db.h"
#include "warren/exec_status.h"
#include "warren/log.h"
#include "warren/queries.h"

#define ENDED_SQL                                                                                  \
    "status IN (" EXEC_SQL(COMPLETED) "," EXEC_SQL(FAILED) "," EXEC_SQL(CANCELLED) "," EXEC_SQL(   \
        TIMEOUT) "," EXEC_SQL(ABANDONED) ")"

/* Without the listener, or to notice a drain: how long a waiter sleeps before it looks again. */
#define WAIT_SLICE_MS 1000
/* A registration outlives its wait by this much (a slow answer still hears the end). */
#define WAIT_MARGIN_S 5

struct api_waiter {
    api_waiter_t *next, *prev;
    int64_t id;
    bool ended;
    fiber_cond_t cond;
};

static void waiter_add(api_waits_t *w, api_waiter_t *a)
{
    a->next = w->head;
    if (w->head)
        w->head->prev = a;
    w->head = a;
    w->n++;
}

static void waiter_remove(api_waits_t *w, api_waiter_t *a)
{
    if (a->prev)
        a->prev->next = a->next;
    else
        w->head = a->next;
    if (a->next)
        a->next->prev = a->prev;
    w->n--;
}

/* The check: which of the executions waited for have ended? Their fibers wake. */
static void check(void *arg)
{
    api_t *x = arg;
    api_waits_t *w = &x->waits;
    do {
        w->again = false;
        pgarr_t ids;
        pgarr_init(&ids);
        for (api_waiter_t *a = w->head; a; a = a->next)
            if (!a->ended)
                pgarr_add_int(&ids, a->id);
        const char *text = pgarr_text(&ids);
        dbconn_t *d = NULL;
        if (ids.n > 0 && text &&
            (d = dbc_pool_acquire(x->api_reads,
                                  now_mono_ms() + x->cfg->api.statement_timeout_ms)) != NULL) {
            const char *p[] = {text};
            PGresult *res = NULL;
            if (dbc_query(d, "looking for ended executions",
                          "SELECT id FROM executions WHERE id = ANY($1::bigint[]) AND " ENDED_SQL,
                          1, p, &res) == DBC_OK) {
                for (int i = 0; i < PQntuples(res); i++) {
                    int64_t id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
                    for (api_waiter_t *a = w->head; a; a = a->next)
                        if (a->id == id && !a->ended) {
                            a->ended = true;
                            fiber_cond_signal(&a->cond);
                        }
                }
            } /* else logged by dbconn: the next announcement looks again, or the deadline ends it */
            PQclear(res);
            dbc_pool_release(x->api_reads, d);
        }
        pgarr_free(&ids);
    } while (w->again && !*x->draining);
    w->checking = false;
}

void api_waits_announce(void *arg)
{
    api_t *x = arg;
    api_waits_t *w = &x->waits;
    if (w->n == 0)
        return;
    if (w->checking) {
        w->again = true;
        return;
    }
    if (fiber_start(x->base, "api-wait-check", check, x) == 0)
        w->checking = true;
}

typedef struct reg_work {
    const char *id, *secs;
    bool found, ended;
} reg_work_t;

/* Register, then read the status under FOR SHARE (schema/functions/195_execution_waiters.sql
 * says why the two together miss no end). */
static int reg_fn(PGconn *db, void *arg, char *err, size_t errlen)
{
    reg_work_t *g = arg;
    const char *p[] = {g->id, g->secs};
    PGresult *res = NULL;
    if (db_exec(db, q_wait_register, 2, p, &res, err, errlen) != 0)
        return -1;
    g->found = PQntuples(res) == 1;
    g->ended = g->found && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return 0;
}

bool api_wait_end(api_t *x, http_req_t *r, const char *id_text, int wait_s)
{
    char secs[16];
    snprintf(secs, sizeof secs, "%d", wait_s + WAIT_MARGIN_S);
    reg_work_t g = {.id = id_text, .secs = secs};
    if (!api_transaction(x, r, "waiting for an execution", reg_fn, &g))
        return false;
    if (!g.found) {
        http_error(r, 404, "not_found", "no execution %s", id_text);
        return false;
    }
    if (g.ended)
        return true;
    api_waits_t *w = &x->waits;
    api_waiter_t a = {.id = strtoll(id_text, NULL, 10)};
    waiter_add(w, &a);
    int64_t deadline = now_mono_ms() + (int64_t)wait_s * 1000;
    for (int64_t now = now_mono_ms(); !a.ended && !*x->draining && r->req && now < deadline;
         now = now_mono_ms()) {
        int64_t until = deadline < now + WAIT_SLICE_MS ? deadline : now + WAIT_SLICE_MS;
        if (fiber_cond_wait(&a.cond, until) == 1)
            continue;
        if (!w->listening || !*w->listening)
            api_waits_announce(x); /* nobody announces: look */
    }
    waiter_remove(w, &a);
    return true;
}

void api_waits_release(api_t *x)
{
    for (api_waiter_t *a = x->waits.head; a; a = a->next)
        fiber_cond_signal(&a->cond);
}
