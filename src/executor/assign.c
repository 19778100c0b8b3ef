/* Worker choice for claimed executions: pinned, else least loaded capable live worker. */
#include <stdio.h>
#include <string.h>
#include "executor/assign.h"
#include "warren/utf8.h"

static bool offers(const assign_worker_t *w, const char *action)
{
    for (size_t i = 0; i < w->n_capabilities; i++)
        if (!strcmp(w->capabilities[i], action))
            return true;
    return false;
}

/* a less loaded than b? Ratios compared by cross-multiplying (capacities are > 0). */
static bool less_loaded(const assign_worker_t *a, const assign_worker_t *b)
{
    long long la = (long long)a->in_flight * b->capacity,
              lb = (long long)b->in_flight * a->capacity;
    if (la != lb)
        return la < lb;
    return a->in_flight < b->in_flight;
}

static int find_worker(const assign_worker_t *w, size_t nw, const char *id)
{
    for (size_t i = 0; i < nw; i++)
        if (!strcmp(w[i].id, id))
            return (int)i;
    return -1;
}

static void assign_one(assign_worker_t *w, size_t nw, assign_job_t *job)
{
    int best = -1;
    size_t capable = 0;
    job->wait_reason[0] = '\0';
    for (size_t i = 0; i < nw; i++) {
        if (w[i].capacity <= 0 || !offers(&w[i], job->action_ref))
            continue;
        capable++;
        if (w[i].in_flight < w[i].capacity && (best < 0 || less_loaded(&w[i], &w[best])))
            best = (int)i;
    }
    job->worker = best >= 0 ? best : ASSIGN_NONE;
    if (best >= 0)
        w[best].in_flight++;
    else if (capable == 0)
        snprintf(job->wait_reason, sizeof job->wait_reason, "no live worker offers action '%.*s'",
                 utf8_prec(job->action_ref, 200), job->action_ref);
    else
        snprintf(job->wait_reason, sizeof job->wait_reason,
                 "all %zu live workers offering '%.*s' are at capacity", capable,
                 utf8_prec(job->action_ref, 200), job->action_ref);
}

void assign_batch(assign_worker_t *workers, size_t nw, assign_job_t *jobs, size_t nj)
{
    for (size_t j = 0; j < nj; j++) {
        if (jobs[j].pinned_worker && *jobs[j].pinned_worker) {
            jobs[j].worker = ASSIGN_PINNED;
            jobs[j].wait_reason[0] = '\0';
            int i = find_worker(workers, nw, jobs[j].pinned_worker);
            if (i >= 0)
                workers[i].in_flight++;
            continue;
        }
        assign_one(workers, nw, &jobs[j]);
    }
}
